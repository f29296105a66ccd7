#pragma once
#include <charconv>
#include <cstdlib>

namespace strata {

// The double a person means by a float: 0.001f widened is
// 0.0010000000474974513, which then shows in saved projects and events.
// This takes the float's shortest decimal form ("0.001", which reads back
// as the same float) and returns that decimal as a double.
inline double shortest_decimal(float f) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf - 1, f);
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

}  // namespace strata
