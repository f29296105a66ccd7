#pragma once
// The rules by which a device's result is judged against the CPU backend's.
// Kept apart from the harness so tests can feed them deliberately wrong data.
//
// Floats: error_i = |d_i - c_i| / max(1, |c_i|), so values below 1 are judged
// absolutely and larger ones relatively; the check passes when the largest
// error is within the tolerance. A NaN on the device matches only a NaN on
// the CPU: device outputs are poisoned with NaN before the kernel runs, so
// an element the kernel never wrote (or computed as NaN) fails however large
// the tolerance. Infinities must match exactly.
#include <cstdint>
#include <span>
#include <string>

namespace strata::gpu_check {

struct Comparison {
  double max_error = 0;
  bool passed = true;
  std::string detail;  // empty when passed: how many elements are off, the first one and both values
};

Comparison compare_floats(std::span<const float> device, std::span<const float> cpu, double tolerance);
// Integers (argmax indices, labels): equal everywhere.
Comparison compare_ints(std::span<const int32_t> device, std::span<const int32_t> cpu);
// Bit patterns (memory copies and fills): equal bits, NaN payloads and signed zeros included.
Comparison compare_bits(std::span<const uint32_t> device, std::span<const uint32_t> cpu);

// The max relative error's formula for one element, shared with the reports.
double element_error(float device, float cpu);

}  // namespace strata::gpu_check
