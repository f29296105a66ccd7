#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/Tensor.h"

namespace strata {

// The safetensors format (huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON {"name": {"dtype", "shape",
// "data_offsets": [begin, end]}, "__metadata__": {string: string}}, then the
// raw little-endian data. PyTorch, JAX and numpy read it. Strata adds a
// CRC-32 of the data section to the metadata ("strata_crc32") and checks it
// on load, so a flipped byte or a short file is an error naming the file.
struct SafeTensorsFile {
  std::vector<std::pair<std::string, Tensor>> tensors;  // in file order
  std::map<std::string, std::string> metadata;
  const Tensor* find(const std::string& name) const;
};

// Writes atomically (temporary file, fsync, rename).
void write_safetensors(const std::string& path, const SafeTensorsFile& file);
// bad_input naming the file (and tensor) for any malformed or corrupted content.
SafeTensorsFile read_safetensors(const std::string& path);

}  // namespace strata
