// The JSON Lines event stream the dashboard reads from strata-run ranks.
#include <sstream>
#include <string>

#include "FuzzInput.h"
#include "train/EventJson.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::string line;
  while (std::getline(in, line)) strata::fuzz::expect_clean([&] { strata::event_from_jsonl(line); });
  return 0;
}
