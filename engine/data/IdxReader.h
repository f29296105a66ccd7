#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/HugePages.h"
#include "data/Dataset.h"

namespace strata {

// The MNIST "IDX" format, plain or gzip-compressed (detected from the bytes,
// not the name). Every problem names the file and what is wrong with it.
struct IdxArray {
  std::vector<int64_t> dims;
  HugePageVector<uint8_t> data;  // only unsigned-byte arrays (type 0x08) are used by image sets
};

IdxArray read_idx(const std::string& path);
// Images (n, rows, cols) + labels (n): a dataset of shape (rows, cols, 1), NHWC.
Dataset load_idx_dataset(const std::string& images_path, const std::string& labels_path);
// Reads a whole file, gunzipping when it starts with the gzip magic.
std::vector<uint8_t> read_maybe_gzip(const std::string& path);

}  // namespace strata
