// An IDX file (Fashion-MNIST's format), plain or gzip-compressed.
#include "FuzzInput.h"
#include "data/IdxReader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::MemoryFile f(data, size);
  return strata::fuzz::expect_clean([&] { strata::read_idx(f.path()); });
}
