#pragma once
// The tolerances of the op comparisons, on the error max |d - c| / max(1, |c|)
// (ResultComparison.h). Both sides compute in float32; they differ only in
// the order of operations (sums, fused multiply-adds) and in the accuracy of
// exp/log/tanh, so the bounds follow float32's unit roundoff u = 2^-24 ~ 6e-8.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace strata::gpu_check::tolerance {

// Copies, selections (max, argmax, im2col), masks and counts: equal values.
constexpr double kExact = 0.0;

// One to a few float operations per element, transcendental ones included:
// CUDA's expf/logf/tanhf are within 2 ulp of correctly rounded and a fused
// multiply-add rounds once instead of twice, so two correct implementations
// differ by a few ulp (~1e-6 at most on these inputs). 1e-5 leaves a margin
// and still catches a wrong formula, a fast-math approximation (~1e-4) or a
// half-precision step (~1e-3).
constexpr double kElementwise = 1e-5;

// A float32 sum of `terms` terms (dot products of gemm, column sums,
// reductions of batch norm): summed in another order its rounding error
// grows like u * sqrt(terms) relative to the result's scale (~0.7 u sqrt(n)
// measured for sequential sums of uniform terms). We allow 1e-5 up to 16
// terms, then 1e-5 * sqrt(terms) / 4 (~60x that estimate): 1e-4 at 1,600
// terms, 2.5e-3 at a million. The inputs of long sums have a nonzero mean
// (BackendComparison*.cpp) so the result's scale is that of its terms: a sum
// that cancels to ~0 would turn order-dependent rounding (~u * n absolute)
// into a large error relative to max(1, |c|) = 1. TF32 tensor-core products
// (~5e-4) still fail on the small, zero-mean gemm checks.
inline double summed(int64_t terms) {
  return 1e-5 * std::max(1.0, std::sqrt(static_cast<double>(std::max<int64_t>(terms, 1))) / 4.0);
}

}  // namespace strata::gpu_check::tolerance
