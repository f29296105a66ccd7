#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

namespace strata {

// out[i] = bufs[0][i] + bufs[1][i] + ... + bufs[n-1][i] for i in [lo, hi),
// always in replica order (so every replica and every run gets the same
// bits). Blocks of a few KB go through a local accumulator: the inner loops
// are plain vectorisable adds, and `out` may be one of the inputs.
inline void sum_buffers(const std::vector<float*>& bufs, size_t lo, size_t hi, float* out) {
  constexpr size_t kBlock = 1024;
  alignas(64) float acc[kBlock];
  const size_t n = bufs.size();
  for (size_t b = lo; b < hi; b += kBlock) {
    const size_t len = std::min(kBlock, hi - b);
    const float* __restrict first = bufs[0] + b;
    std::memcpy(acc, first, len * sizeof(float));
    for (size_t r = 1; r < n; ++r) {
      const float* __restrict src = bufs[r] + b;
      for (size_t i = 0; i < len; ++i) acc[i] += src[i];
    }
    std::memcpy(out + b, acc, len * sizeof(float));
  }
}

}  // namespace strata
