#pragma once
#include <chrono>

namespace strata {

// Seconds on the monotonic clock: for intervals (step times, rates), never
// for dates.
inline double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace strata
