#pragma once
// Small helpers the benchmark programs share: medians and command-line lists.
#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// "25M" = 25,000,000: decimal K/M/G suffixes (and a trailing unit such as B,
// which is accepted and ignored when given in `unit_ok`).
inline size_t parse_decimal(const std::string& s, const std::string& unit_ok = "") {
  size_t pos = 0;
  double v = std::stod(s, &pos);
  std::string unit = s.substr(pos);
  if (!unit_ok.empty() && unit.size() >= unit_ok.size() && unit.compare(unit.size() - unit_ok.size(), unit_ok.size(), unit_ok) == 0)
    unit.resize(unit.size() - unit_ok.size());
  if (unit == "K" || unit == "k") v *= 1e3;
  else if (unit == "M") v *= 1e6;
  else if (unit == "G") v *= 1e9;
  else if (!unit.empty()) throw std::invalid_argument("bad number " + s + " (use K, M or G)");
  return static_cast<size_t>(v);
}

// "1,2,4" -> {f("1"), f("2"), f("4")}.
template <typename T, typename F>
std::vector<T> parse_list(const std::string& s, F f) {
  std::vector<T> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(f(item));
  return out;
}

}  // namespace strata::bench
