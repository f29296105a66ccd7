#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

namespace strata {

// Whether a JSON number is a whole number that the integer type I holds.
// The JSON library converts out-of-range values by plain casts (3e19 to a
// 64-bit integer is undefined behaviour, 4294967297 to 32 bits becomes 1),
// so every reader range-checks with this before get<I>(). Floats count only
// when `whole_floats` allows them (3.0 as 3).
template <typename I>
bool json_integer_fits(const nlohmann::json& v, bool whole_floats) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<I>::max());
  if (v.is_number_integer()) {
    const int64_t n = v.get<int64_t>();
    return n >= static_cast<int64_t>(std::numeric_limits<I>::min()) &&
           (n < 0 || static_cast<uint64_t>(n) <= static_cast<uint64_t>(std::numeric_limits<I>::max()));
  }
  if (!whole_floats || !v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::floor(d) == d && d >= static_cast<double>(std::numeric_limits<I>::min()) &&
         d < static_cast<double>(std::numeric_limits<I>::max());
}

}  // namespace strata
