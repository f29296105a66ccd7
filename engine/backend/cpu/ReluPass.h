#pragma once
// The relu's gradient on the CPU, one element at a time, for
// activation_backward and batch norm's relu backward passes alike.
#include <bit>
#include <cstdint>

namespace strata {

// d where v > 0, else 0 (a NaN v gives 0): the gradient d through a relu
// whose input, or output, is v. An and with the comparison's mask: written
// as a select (or Eigen's select) GCC compiled it to masked loads of d, and
// left batch norm's backward sums loop scalar.
inline float relu_pass(float v, float d) {
  const uint32_t keep = 0u - static_cast<uint32_t>(v > 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(d) & keep);
}

}  // namespace strata
