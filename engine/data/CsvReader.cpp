#include "data/CsvReader.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/Error.h"

namespace strata {

namespace {
std::vector<std::string> split_line(const std::string& line, char delim) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream ss(line);
  while (std::getline(ss, cell, delim)) {
    auto b = cell.find_first_not_of(" \t\r\"");
    auto e = cell.find_last_not_of(" \t\r\"");
    cells.push_back(b == std::string::npos ? std::string() : cell.substr(b, e - b + 1));
  }
  if (!line.empty() && line.back() == delim) cells.emplace_back();
  return cells;
}

bool parse_float(const std::string& s, float& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(out);
}
}  // namespace

Dataset load_csv(const std::string& path, const CsvOptions& options) {
  std::ifstream in(path);
  if (!in) throw bad_input(path + ": cannot open file");
  std::string line;
  int64_t line_no = 0;
  size_t columns = 0;
  int label_col = -1;
  std::vector<float> values;
  std::vector<int32_t> labels;
  bool first = true;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto cells = split_line(line, options.delimiter);
    if (first) {
      first = false;
      columns = cells.size();
      if (columns < 2) throw bad_input(path + ":" + std::to_string(line_no) + ": need at least one feature and a label column");
      label_col = options.label_column < 0 ? static_cast<int>(columns) + options.label_column : options.label_column;
      if (label_col < 0 || label_col >= static_cast<int>(columns))
        throw bad_input(path + ": label column " + std::to_string(options.label_column) + " out of range (" +
                        std::to_string(columns) + " columns)");
      bool numeric = true;
      float tmp;
      for (auto& c : cells) numeric = numeric && parse_float(c, tmp);
      if (options.header == CsvOptions::Header::Yes || (options.header == CsvOptions::Header::Auto && !numeric)) continue;
    }
    if (cells.size() != columns)
      throw bad_input(path + ":" + std::to_string(line_no) + ": expected " + std::to_string(columns) + " columns, got " +
                      std::to_string(cells.size()));
    for (size_t c = 0; c < cells.size(); ++c) {
      float v;
      if (!parse_float(cells[c], v))
        throw bad_input(path + ":" + std::to_string(line_no) + ": column " + std::to_string(c + 1) + ": '" + cells[c] +
                        "' is not a number");
      if (static_cast<int>(c) == label_col) {
        if (v < 0 || v != std::floor(v) || v > 1e6f)
          throw bad_input(path + ":" + std::to_string(line_no) + ": column " + std::to_string(c + 1) +
                          ": label must be a non-negative integer, got '" + cells[c] + "'");
        labels.push_back(static_cast<int32_t>(v));
      } else {
        values.push_back(v);
      }
    }
  }
  if (labels.empty()) throw bad_input(path + ": no data rows");
  int classes = 0;
  for (auto l : labels) classes = std::max(classes, l + 1);
  return Dataset::from_float(Shape{static_cast<int64_t>(columns) - 1}, std::move(values), std::move(labels), classes);
}

}  // namespace strata
