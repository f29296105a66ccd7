// The CUDA backend's per-channel kernels over (rows, channels) views: the
// reductions (batch norm's sums, a layer's bias gradient) and batch norm's
// element-wise passes. Each mirrors its CPU counterpart (CpuImageKernels.cpp,
// CpuBackend.cpp); see CudaKernels.h for the rules every launcher keeps.
//
// Determinism: no floating-point atomics. A reduction adds each block's
// rows in a fixed order into per-chunk partial sums, and the chunks' last
// block to finish (an integer ticket says which) adds the partials in chunk
// order, so a GPU's results are the same from run to run. Where a product is
// added (batch norm), nvcc fuses the multiply-add (--fmad=true) and the
// result may differ from the CPU's in the last place, inside the GPU check's
// tolerances.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/CudaActivation.cuh"
#include "backend/cuda/CudaCheck.h"
#include "backend/cuda/CudaKernels.h"
#include "backend/cuda/CudaLaunch.cuh"

namespace strata::cuda {

namespace {

// Batch norm's per-channel affine map v = x * scale + shift, in the one
// expression that batch_norm_apply and the relu's backward passes compute
// (the latter take the relu's gradient from v > 0 and must see the same
// bits). Both multiply-adds are explicit fused ones (__fmaf_rn): a plain
// a * b + c leaves fusing to ptxas, kernel by kernel, and one unfused
// rounding flips the relu's mask where v is near 0. They are also what the
// CPU computes (CpuImageKernels.cpp: std::fma for the shift, and GCC fuses
// x * scale + shift under -march=native).
__device__ __forceinline__ void channel_affine(int64_t c, const float* mean, const float* inv_std, const float* gamma,
                                               const float* beta, float& scale, float& shift) {
  scale = inv_std[c] * (gamma ? gamma[c] : 1.0f);
  shift = __fmaf_rn(-mean[c], scale, beta ? beta[c] : 0.0f);
}
__device__ __forceinline__ float affine(float x, float scale, float shift) { return __fmaf_rn(x, scale, shift); }

// ---- per-channel reductions -------------------------------------------------------

// Blocks of (tile channels) x (groups row lanes), tile * groups = kThreads:
// a warp reads whole 128-byte runs of a row when channels >= 32, and several
// consecutive rows when fewer. Block (chunk, tile) reduces rows
// [rows * chunk / chunks, rows * (chunk + 1) / chunks) of its channels into
// one double per channel and quantity. The chunk count depends on (rows,
// channels) only, never on the GPU, so the scratch size is known before the
// launch and the bits never change. No rows: one empty chunk (sums of 0).
struct ReducePlan {
  int tile, groups;
  int64_t tiles, chunks;
};

constexpr int64_t kReduceBlocks = 1024;  // blocks to aim for: several per SM on any current GPU

ReducePlan reduce_plan(int64_t rows, int64_t channels) {
  ReducePlan p{};
  p.tile = 1;
  while (p.tile < kWarp && p.tile < channels) p.tile *= 2;
  p.groups = kThreads / p.tile;
  p.tiles = (channels + p.tile - 1) / p.tile;
  // At least 8 rows per thread, so a block's loads outweigh its combining.
  const int64_t min_rows = 8 * int64_t{p.groups};
  const int64_t max_chunks = std::max<int64_t>(1, kReduceBlocks / std::max<int64_t>(1, p.tiles));
  p.chunks = std::clamp<int64_t>((rows + min_rows - 1) / min_rows, 1, max_chunks);
  return p;
}

// What a reduction reads per (row, channel): the plain sums of x and x^2,
// batch norm's sums of dy and dy * xhat, or the activation's gradient (also
// written out) and its sum. Accumulated in double like the CPU's batch norm.
struct SumsOp {
  const float* x;
  __device__ void prepare(int64_t) {}
  __device__ void add(int64_t at, double& a, double& b) const {
    const float v = x[at];
    a += v;
    b += static_cast<double>(v) * v;
  }
};

struct BackwardOp {
  const float *dy, *x, *mean, *inv_std;
  float m, is;
  __device__ void prepare(int64_t c) {
    m = mean[c];
    is = inv_std[c];
  }
  // (x - mean) in float, the rest in double: the CPU's expression.
  __device__ void add_gradient(int64_t at, float g, double& a, double& b) const {
    const double d = g;
    a += d;
    b += d * (x[at] - m) * is;
  }
  __device__ void add(int64_t at, double& a, double& b) const { add_gradient(at, dy[at], a, b); }
};

// BackwardOp's sums of dz = v > 0 ? dy : 0, the gradient of the relu after
// batch_norm_apply, v taken again from x as that kernel computes it
// (batch_norm_relu_backward_reduce; dz is not stored).
struct ReluBackwardOp : BackwardOp {
  const float *gamma, *beta;
  float scale, shift;
  __device__ void prepare(int64_t c) {
    BackwardOp::prepare(c);
    channel_affine(c, mean, inv_std, gamma, beta, scale, shift);
  }
  __device__ void add(int64_t at, double& a, double& b) const {
    add_gradient(at, activation_gradient(Activation::Relu, affine(x[at], scale, shift), dy[at]), a, b);
  }
};

// A column's plain sum (sum_rows: a layer's bias gradient without an activation).
struct ColumnSumOp {
  const float* x;
  __device__ void prepare(int64_t) {}
  __device__ void add(int64_t at, double& a, double&) const { a += x[at]; }
};

struct ActivationGradientOp {
  Activation act;
  const float *y, *dy;
  float* dx;
  __device__ void prepare(int64_t) {}
  __device__ void add(int64_t at, double& a, double&) const {
    const float g = activation_gradient(act, y[at], dy[at]);
    dx[at] = g;
    a += g;
  }
};

// Adds sa/sb over the block's row lanes (groups, a power of two) into row
// lane 0 by a fixed tree: the same order on every run.
__device__ void add_row_lanes(double* sa, double* sb, int t, int tile) {
  for (int h = static_cast<int>(blockDim.y) / 2; h > 0; h /= 2) {
    if (static_cast<int>(threadIdx.y) < h) {
      sa[t] += sa[t + h * tile];
      sb[t] += sb[t + h * tile];
    }
    __syncthreads();
  }
}

// One launch: each block writes its chunk's partial sums, then takes a
// ticket for its channel tile; the tile's last block (the ticket says it
// is: every other chunk's partials are written and fenced) adds the chunks'
// partials in chunk order and sets the ticket back to 0 for the next launch
// (or the next replay of a captured step). part_b and out_b may be null;
// accumulate adds the sums to out_a's values.
template <typename Op>
__global__ void __launch_bounds__(kThreads)
    reduce_channels_kernel(Op op, int64_t rows, int64_t channels, int64_t tiles, int64_t chunks, double* part_a,
                           double* part_b, unsigned* tickets, float* out_a, float* out_b, bool accumulate) {
  __shared__ double sa[kThreads], sb[kThreads];
  __shared__ bool last;
  const int tile = static_cast<int>(blockDim.x), groups = static_cast<int>(blockDim.y);
  const int t = static_cast<int>(threadIdx.y) * tile + static_cast<int>(threadIdx.x);
  const int64_t chunk = blockIdx.x;
  const int64_t lo = rows * chunk / chunks, hi = rows * (chunk + 1) / chunks;
  for (int64_t k = blockIdx.y; k < tiles; k += gridDim.y) {
    const int64_t c = k * tile + threadIdx.x;
    double a = 0.0, b = 0.0;
    if (c < channels) {
      Op o = op;
      o.prepare(c);
      // Unrolled so each thread has several independent loads in flight.
#pragma unroll 4
      for (int64_t r = lo + threadIdx.y; r < hi; r += groups) o.add(r * channels + c, a, b);
    }
    sa[t] = a;
    sb[t] = b;
    __syncthreads();
    add_row_lanes(sa, sb, t, tile);
    if (threadIdx.y == 0 && c < channels) {
      part_a[chunk * channels + c] = sa[t];
      if (part_b) part_b[chunk * channels + c] = sb[t];
    }
    __syncthreads();
    // The ticket's thread fences after the barrier, so the release covers the
    // partials every lane of the block wrote (the barrier made them its own):
    // they reach every SM before the ticket says so. It fences again after
    // taking the last ticket (the acquire, in the thread that read it), and
    // the barrier hands that on to the block's other threads.
    if (t == 0) {
      __threadfence();
      last = atomicAdd(&tickets[k], 1u) == static_cast<unsigned>(chunks - 1);
      if (last) __threadfence();
    }
    __syncthreads();
    if (last) {
      a = 0.0;
      b = 0.0;
      // Read past this SM's cache (__ldcg): other blocks wrote them.
      if (c < channels)
        for (int64_t q = threadIdx.y; q < chunks; q += groups) {
          a += __ldcg(&part_a[q * channels + c]);
          if (part_b) b += __ldcg(&part_b[q * channels + c]);
        }
      sa[t] = a;
      sb[t] = b;
      __syncthreads();
      add_row_lanes(sa, sb, t, tile);
      if (threadIdx.y == 0 && c < channels) {
        out_a[c] = accumulate ? out_a[c] + static_cast<float>(sa[t]) : static_cast<float>(sa[t]);
        if (out_b) out_b[c] = static_cast<float>(sb[t]);
      }
      if (t == 0) tickets[k] = 0;
    }
    __syncthreads();  // the next tile reuses sa, sb and last
  }
}

template <typename Op>
void reduce_channels(cudaStream_t s, const Op& op, int64_t rows, int64_t channels, float* out_a, float* out_b,
                     const ReduceScratch& scratch, bool accumulate = false) {
  if (channels <= 0) return;
  const ReducePlan p = reduce_plan(rows, channels);
  auto* part_a = static_cast<double*>(scratch.partials);
  double* part_b = out_b ? part_a + p.chunks * channels : nullptr;
  const dim3 grid(static_cast<unsigned>(p.chunks), static_cast<unsigned>(std::min<int64_t>(p.tiles, kMaxBlocks)));
  const dim3 block(static_cast<unsigned>(p.tile), static_cast<unsigned>(p.groups));
  reduce_channels_kernel<<<grid, block, 0, s>>>(op, rows, channels, p.tiles, p.chunks, part_a, part_b, scratch.tickets, out_a,
                                                out_b, accumulate);
  STRATA_CUDA_LAUNCHED("reduce_channels");
}

// ---- batch normalisation ------------------------------------------------------------

__global__ void batch_norm_stats_kernel(const float* sums, int64_t channels, float epsilon, float* mean, float* inv_std) {
  STRATA_GRID_STRIDE(int64_t, c, channels) {
    const double count = sums[2 * channels];
    const double m = count > 0 ? sums[c] / count : 0.0;
    // std::max(0.0, v): a NaN variance becomes 0, like on the CPU.
    const double v = count > 0 ? sums[channels + c] / count - m * m : 0.0;
    const double var = 0.0 < v ? v : 0.0;
    mean[c] = static_cast<float>(m);
    inv_std[c] = static_cast<float>(1.0 / sqrt(var + epsilon));
  }
}

__global__ void batch_norm_inference_stats_kernel(const float* moving_mean, const float* moving_var, int64_t channels,
                                                  float epsilon, float* mean, float* inv_std) {
  STRATA_GRID_STRIDE(int64_t, c, channels) {
    mean[c] = moving_mean[c];
    // Correctly rounded float sqrt and division, as std::sqrt and / on the CPU.
    inv_std[c] = __fdiv_rn(1.0f, __fsqrt_rn(moving_var[c] + epsilon));
  }
}

__global__ void batch_norm_moving_update_kernel(const float* mean, const float* inv_std, const float* count, int64_t channels,
                                                float epsilon, float momentum, float* moving_mean, float* moving_var) {
  // count comes from device memory (a step's rows over all replicas): decided here, not on the host.
  if (!(count[0] > 0.0f)) return;
  STRATA_GRID_STRIDE(int64_t, c, channels) {
    const float var = 1.0f / (inv_std[c] * inv_std[c]) - epsilon;
    moving_mean[c] = moving_mean[c] * momentum + mean[c] * (1.0f - momentum);
    moving_var[c] = moving_var[c] * momentum + var * (1.0f - momentum);
  }
}

// The element-wise batch-norm kernels use the reductions' block shape: a
// thread keeps one channel, so its per-channel factors are computed once and
// no index is divided; rows stride over blockIdx.x, channel tiles over
// blockIdx.y.
struct ApplyPlan {
  dim3 grid, block;
};

ApplyPlan apply_plan(int64_t rows, int64_t channels) {
  const ReducePlan p = reduce_plan(rows, channels);
  // About four rows per thread; the grid-stride loop takes the rest.
  const int64_t row_blocks = std::clamp<int64_t>((rows + 4 * p.groups - 1) / (4 * p.groups), 1, kMaxBlocks);
  return {dim3(static_cast<unsigned>(row_blocks), static_cast<unsigned>(std::min<int64_t>(p.tiles, kMaxBlocks))),
          dim3(static_cast<unsigned>(p.tile), static_cast<unsigned>(p.groups))};
}

// With kRelu, relu after (batch_norm_apply_relu), rounded as a separate pass would.
template <bool kRelu>
__global__ void batch_norm_apply_kernel(const float* __restrict__ x, int64_t rows, int64_t channels,
                                        const float* __restrict__ mean, const float* __restrict__ inv_std,
                                        const float* __restrict__ gamma, const float* __restrict__ beta,
                                        float* __restrict__ y) {
  for (int64_t k = blockIdx.y; k * blockDim.x < channels; k += gridDim.y) {
    const int64_t c = k * blockDim.x + threadIdx.x;
    if (c >= channels) continue;
    float scale, shift;
    channel_affine(c, mean, inv_std, gamma, beta, scale, shift);
    for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.y) + threadIdx.y; r < rows;
         r += static_cast<int64_t>(gridDim.x) * blockDim.y) {
      const float v = affine(x[r * channels + c], scale, shift);
      y[r * channels + c] = kRelu ? activate(Activation::Relu, v) : v;
    }
  }
}

// With kRelu, of dz = v > 0 ? dy : 0 (batch_norm_relu_backward_apply; beta
// is read then).
template <bool kRelu>
__global__ void batch_norm_backward_apply_kernel(const float* __restrict__ dy, const float* __restrict__ x, int64_t rows,
                                                 int64_t channels, const float* __restrict__ mean,
                                                 const float* __restrict__ inv_std, const float* __restrict__ gamma,
                                                 const float* __restrict__ beta, const float* __restrict__ sum_dy,
                                                 const float* __restrict__ sum_dy_xhat, const float* __restrict__ count,
                                                 float* __restrict__ dx) {
  // count is the rows over all replicas, read on the device like the CPU reads count[0].
  const float inv_count = static_cast<float>(1.0 / static_cast<double>(count[0]));
  for (int64_t k = blockIdx.y; k * blockDim.x < channels; k += gridDim.y) {
    const int64_t c = k * blockDim.x + threadIdx.x;
    if (c >= channels) continue;
    const float m = mean[c], is = inv_std[c];
    const float sdy = sum_dy[c], sdx = sum_dy_xhat[c];
    // scale is dx's factor gamma * inv_std too.
    float scale, shift;
    channel_affine(c, mean, inv_std, gamma, kRelu ? beta : nullptr, scale, shift);
    for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.y) + threadIdx.y; r < rows;
         r += static_cast<int64_t>(gridDim.x) * blockDim.y) {
      const float xv = x[r * channels + c];
      float d = dy[r * channels + c];
      if constexpr (kRelu) d = activation_gradient(Activation::Relu, affine(xv, scale, shift), d);
      const float xhat = (xv - m) * is;
      dx[r * channels + c] = scale * (d - inv_count * (sdy + xhat * sdx));
    }
  }
}

}  // namespace

// ---- launchers ------------------------------------------------------------------

ReduceScratchSize channel_reduce_scratch_size(int64_t rows, int64_t channels) {
  if (channels <= 0) return {};
  const ReducePlan p = reduce_plan(rows, channels);
  // Two doubles (a and b) per chunk and channel; a ticket per channel tile.
  return {static_cast<size_t>(2 * p.chunks * channels) * sizeof(double), static_cast<size_t>(p.tiles) * sizeof(unsigned)};
}

void channel_sums(cudaStream_t s, const float* x, int64_t rows, int64_t channels, float* sum, float* sumsq,
                  const ReduceScratch& scratch) {
  reduce_channels(s, SumsOp{x}, rows, channels, sum, sumsq, scratch);
}

void batch_norm_backward_reduce(cudaStream_t s, const float* dy, const float* x, int64_t rows, int64_t channels,
                                const float* mean, const float* inv_std, float* sum_dy, float* sum_dy_xhat,
                                const ReduceScratch& scratch) {
  reduce_channels(s, BackwardOp{dy, x, mean, inv_std, 0.0f, 0.0f}, rows, channels, sum_dy, sum_dy_xhat, scratch);
}

void batch_norm_relu_backward_reduce(cudaStream_t s, const float* dy, const float* x, int64_t rows, int64_t channels,
                                     const float* mean, const float* inv_std, const float* gamma, const float* beta,
                                     float* sum_dz, float* sum_dz_xhat, const ReduceScratch& scratch) {
  reduce_channels(s, ReluBackwardOp{{dy, x, mean, inv_std, 0.0f, 0.0f}, gamma, beta, 0.0f, 0.0f}, rows, channels, sum_dz,
                  sum_dz_xhat, scratch);
}

void sum_rows(cudaStream_t s, const float* x, int64_t rows, int64_t cols, float* out, bool accumulate,
              const ReduceScratch& scratch) {
  reduce_channels(s, ColumnSumOp{x}, rows, cols, out, nullptr, scratch, accumulate);
}

void bias_activation_backward(cudaStream_t s, Activation act, const float* y, const float* dy, float* dx, float* dbias,
                              int64_t rows, int64_t cols, const ReduceScratch& scratch) {
  reduce_channels(s, ActivationGradientOp{act, y, dy, dx}, rows, cols, dbias, nullptr, scratch);
}

void batch_norm_stats(cudaStream_t s, const float* sums, int64_t channels, float epsilon, float* mean, float* inv_std) {
  if (channels <= 0) return;
  batch_norm_stats_kernel<<<blocks_for(channels), kThreads, 0, s>>>(sums, channels, epsilon, mean, inv_std);
  STRATA_CUDA_LAUNCHED("batch_norm_stats");
}

void batch_norm_inference_stats(cudaStream_t s, const float* moving_mean, const float* moving_var, int64_t channels,
                                float epsilon, float* mean, float* inv_std) {
  if (channels <= 0) return;
  batch_norm_inference_stats_kernel<<<blocks_for(channels), kThreads, 0, s>>>(moving_mean, moving_var, channels, epsilon,
                                                                              mean, inv_std);
  STRATA_CUDA_LAUNCHED("batch_norm_inference_stats");
}

void batch_norm_moving_update(cudaStream_t s, const float* mean, const float* inv_std, const float* count, int64_t channels,
                              float epsilon, float momentum, float* moving_mean, float* moving_var) {
  if (channels <= 0) return;
  batch_norm_moving_update_kernel<<<blocks_for(channels), kThreads, 0, s>>>(mean, inv_std, count, channels, epsilon, momentum,
                                                                            moving_mean, moving_var);
  STRATA_CUDA_LAUNCHED("batch_norm_moving_update");
}

void batch_norm_apply(cudaStream_t s, const float* x, int64_t rows, int64_t channels, const float* mean, const float* inv_std,
                      const float* gamma, const float* beta, float* y, bool relu) {
  if (rows <= 0 || channels <= 0) return;
  const ApplyPlan p = apply_plan(rows, channels);
  if (relu) batch_norm_apply_kernel<true><<<p.grid, p.block, 0, s>>>(x, rows, channels, mean, inv_std, gamma, beta, y);
  else batch_norm_apply_kernel<false><<<p.grid, p.block, 0, s>>>(x, rows, channels, mean, inv_std, gamma, beta, y);
  STRATA_CUDA_LAUNCHED("batch_norm_apply");
}

void batch_norm_backward_apply(cudaStream_t s, const float* dy, const float* x, int64_t rows, int64_t channels,
                               const float* mean, const float* inv_std, const float* gamma, const float* beta,
                               const float* sum_dy, const float* sum_dy_xhat, const float* count, float* dx, bool relu) {
  if (rows <= 0 || channels <= 0) return;
  const ApplyPlan p = apply_plan(rows, channels);
  if (relu)
    batch_norm_backward_apply_kernel<true>
        <<<p.grid, p.block, 0, s>>>(dy, x, rows, channels, mean, inv_std, gamma, beta, sum_dy, sum_dy_xhat, count, dx);
  else
    batch_norm_backward_apply_kernel<false>
        <<<p.grid, p.block, 0, s>>>(dy, x, rows, channels, mean, inv_std, gamma, beta, sum_dy, sum_dy_xhat, count, dx);
  STRATA_CUDA_LAUNCHED("batch_norm_backward_apply");
}

}  // namespace strata::cuda
