#pragma once
#include <string>

#include "data/Dataset.h"

namespace strata {

struct CsvOptions {
  // Column holding the integer class label; negative counts from the end (-1 = last).
  int label_column = -1;
  // "auto": a first row with any non-numeric cell is a header.
  enum class Header { Auto, Yes, No } header = Header::Auto;
  char delimiter = ',';
};

// Numeric feature columns and an integer label column. Bad cells are
// reported with file, line and column.
Dataset load_csv(const std::string& path, const CsvOptions& options);

}  // namespace strata
