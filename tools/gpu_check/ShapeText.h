#pragma once
// Shape descriptions for check records: "1000x37", "m=37 n=19 k=53 TN".
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>

namespace strata::gpu_check {

inline std::string dims(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t x : d) {
    if (!s.empty()) s += 'x';
    s += std::to_string(x);
  }
  return s;
}

// Short decimal for parameters in descriptions (0.75, 1e-07).
inline std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace strata::gpu_check
