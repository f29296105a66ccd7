// A project file (JSON) as a user or a colleague hands it over.
#include "FuzzInput.h"
#include "project/ProjectFile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::MemoryFile f(data, size);
  return strata::fuzz::expect_clean([&] { strata::load_project(f.path()); });
}
