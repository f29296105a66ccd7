#pragma once
// The relu's gradient on the CPU, for activation_backward and batch norm's
// relu backward alike.
#include <cstdint>

namespace strata {

// dx[i] = y[i] > 0 ? dy[i] : 0, with y the relu's output (a NaN y gives 0).
// dy is read whatever y is: written as a conditional read (or Eigen's select
// of (y > 0, dy, 0)) GCC compiled it to masked loads of dy. dx may be dy
// itself: every element is read before it is written.
inline void relu_gradient(const float* y, const float* dy, float* dx, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float g = dy[i];
    dx[i] = y[i] > 0.0f ? g : 0.0f;
  }
}

}  // namespace strata
