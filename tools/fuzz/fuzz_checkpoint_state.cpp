// A checkpoint's state.json (what --resume and the run history read first).
#include <cstdlib>
#include <fstream>
#include <string>

#include "FuzzInput.h"
#include "train/Checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/strata-fuzz-ckpt-XXXXXX";
    if (!::mkdtemp(tmpl)) std::abort();
    return std::string(tmpl);
  }();
  std::ofstream(dir + "/state.json", std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return strata::fuzz::expect_clean([&] { strata::CheckpointManager::read_info(dir); });
}
