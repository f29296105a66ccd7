// A .safetensors file (checkpoint weights, exported or received).
#include "FuzzInput.h"
#include "train/SafeTensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::MemoryFile f(data, size);
  return strata::fuzz::expect_clean([&] { strata::read_safetensors(f.path()); });
}
