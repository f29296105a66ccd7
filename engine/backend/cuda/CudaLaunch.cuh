#pragma once
// Launch shapes shared by the image kernels (CudaImageKernels.cu) and the
// per-channel kernels (CudaChannelKernels.cu).
#include <algorithm>
#include <cstdint>

namespace strata::cuda {

inline constexpr int kThreads = 256;
inline constexpr int kWarp = 32;
// Grid-stride loops: enough blocks to fill any current GPU many times over,
// never more than the work needs.
inline constexpr int64_t kMaxBlocks = 65535;
inline unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

}  // namespace strata::cuda

#define STRATA_GRID_STRIDE(I, i, n)                                                                          \
  for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < (n); \
       i += static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x))
