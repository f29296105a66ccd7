// A CSV dataset; the first byte picks the header rule and label column.
#include "FuzzInput.h"
#include "data/CsvReader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  strata::CsvOptions o;
  o.header = static_cast<strata::CsvOptions::Header>(data[0] % 3);
  o.label_column = static_cast<int>(data[0] >> 2) % 5 - 2;
  strata::fuzz::MemoryFile f(data + 1, size - 1);
  return strata::fuzz::expect_clean([&] { strata::load_csv(f.path(), o); });
}
