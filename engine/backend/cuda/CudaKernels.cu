// The CUDA backend's dense, element-wise and per-row kernels. Each mirrors
// its CPU counterpart in CpuBackend.cpp operation for operation; see
// CudaKernels.h for the rules every launcher keeps (stream order only, no
// host sync, capturable in a graph).
#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cuda/CudaActivation.cuh"
#include "backend/cuda/CudaCheck.h"
#include "backend/cuda/CudaKernels.h"
#include "core/Rng.h"

namespace strata::cuda {

namespace {

constexpr int kThreads = 256;
// Grid-stride loops: enough blocks to fill any current GPU several times,
// never more than the work needs.
unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 8192));
}

#define STRATA_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// Per-row kernels give each row one warp: rows are short (the classes of a
// classifier), so a warp's lanes stride over the columns and combine with shuffles.
constexpr int kWarp = 32;
constexpr int kRowsPerBlock = kThreads / kWarp;
unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>(std::clamp<int64_t>((rows + kRowsPerBlock - 1) / kRowsPerBlock, 1, 65535));
}
#define STRATA_WARP_ROWS(r, rows)                                                                         \
  for (int64_t r = blockIdx.x * static_cast<int64_t>(kRowsPerBlock) + threadIdx.x / kWarp; r < (rows); \
       r += static_cast<int64_t>(gridDim.x) * kRowsPerBlock)

__device__ float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ float row_max(const float* x, int64_t cols, int lane) {
  float m = -INFINITY;
  for (int64_t c = lane; c < cols; c += kWarp) m = fmaxf(m, x[c]);
  return warp_max(m);
}

__global__ void add_bias_rows_kernel(float* y, const float* bias, int64_t rows, int64_t cols) {
  STRATA_GRID_STRIDE(i, rows * cols) y[i] += bias[i % cols];
}

__global__ void fill_kernel(uint32_t* y, int64_t n, uint32_t word) {
  STRATA_GRID_STRIDE(i, n) y[i] = word;
}

// A 32x32 tile through shared memory, so both the reads and the writes are
// coalesced (images moved between NHWC and NCHW are tens of MiB); one padding
// column keeps the tile's column reads free of bank conflicts. blockIdx.z
// walks the batch of matrices, blockIdx.y the row tiles (grid limits).
constexpr int kTile = 32;
__global__ void transpose_kernel(const float* __restrict__ in, int64_t rows, int64_t cols, int64_t batch,
                                 float* __restrict__ out) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTile;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z)
    for (int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile; r0 < rows; r0 += static_cast<int64_t>(gridDim.y) * kTile) {
      const float* src = in + b * rows * cols;
      float* dst = out + b * rows * cols;
      for (int i = threadIdx.y; i < kTile; i += blockDim.y) {
        const int64_t r = r0 + i, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[i][threadIdx.x] = src[r * cols + c];
      }
      __syncthreads();
      for (int i = threadIdx.y; i < kTile; i += blockDim.y) {
        const int64_t c = c0 + i, r = r0 + threadIdx.x;
        if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][i];
      }
      __syncthreads();
    }
}

__global__ void activation_forward_kernel(Activation act, const float* x, float* y, int64_t n) {
  STRATA_GRID_STRIDE(i, n) y[i] = activate(act, x[i]);
}

// add_bias_rows then activation_forward in one pass: the same two roundings.
__global__ void bias_activation_kernel(Activation act, float* y, const float* bias, int64_t rows, int64_t cols) {
  STRATA_GRID_STRIDE(i, rows * cols) y[i] = activate(act, y[i] + bias[i % cols]);
}

__global__ void softmax_kernel(const float* x, float* y, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % kWarp;
  STRATA_WARP_ROWS(r, rows) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const float mx = row_max(xr, cols, lane);
    float s = 0.0f;
    for (int64_t c = lane; c < cols; c += kWarp) s += (yr[c] = expf(xr[c] - mx));
    const float inv = 1.0f / warp_sum(s);
    for (int64_t c = lane; c < cols; c += kWarp) yr[c] *= inv;
  }
}

__global__ void activation_backward_kernel(Activation act, const float* y, const float* dy, float* dx, int64_t n) {
  STRATA_GRID_STRIDE(i, n) dx[i] = activation_gradient(act, y[i], dy[i]);
}

__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % kWarp;
  STRATA_WARP_ROWS(r, rows) {
    const float* yr = y + r * cols;
    const float* gr = dy + r * cols;
    float dot = 0.0f;
    for (int64_t c = lane; c < cols; c += kWarp) dot += yr[c] * gr[c];
    dot = warp_sum(dot);
    for (int64_t c = lane; c < cols; c += kWarp) dx[r * cols + c] = yr[c] * (gr[c] - dot);
  }
}

// Row r's loss and, when dlogits is given, d loss_r / d logits_r, times
// scale[0] when scale is given (rounded as a separate scale_rows would), by
// one warp (lane: this thread's).
__device__ void sparse_softmax_xent_row(const float* logits, const int32_t* labels, int64_t r, int64_t cols,
                                        const float* scale, float* loss, float* dlogits, int lane) {
  const float* x = logits + r * cols;
  const int32_t label = labels[r];
  if (label < 0 || label >= cols) {
    // Reported through check_labels' flag; never read outside the row.
    if (lane == 0) loss[r] = 0.0f;
    if (dlogits)
      for (int64_t c = lane; c < cols; c += kWarp) dlogits[r * cols + c] = 0.0f;
    return;
  }
  const float mx = row_max(x, cols, lane);
  float s = 0.0f;
  for (int64_t c = lane; c < cols; c += kWarp) s += expf(x[c] - mx);
  const float lse = mx + logf(warp_sum(s));
  if (lane == 0) loss[r] = lse - x[label];
  if (!dlogits) return;
  for (int64_t c = lane; c < cols; c += kWarp) {
    const float d = expf(x[c] - lse) - (c == label ? 1.0f : 0.0f);
    dlogits[r * cols + c] = scale ? d * scale[0] : d;
  }
}

__global__ void sparse_softmax_xent_kernel(const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                           const float* scale, float* loss, float* dlogits) {
  const int lane = threadIdx.x % kWarp;
  STRATA_WARP_ROWS(r, rows) sparse_softmax_xent_row(logits, labels, r, cols, scale, loss, dlogits, lane);
}

__global__ void softmax_xent_kernel(const float* logits, const float* targets, int64_t rows, int64_t cols, float* loss,
                                    float* dlogits) {
  const int lane = threadIdx.x % kWarp;
  STRATA_WARP_ROWS(r, rows) {
    const float* x = logits + r * cols;
    const float* t = targets + r * cols;
    const float mx = row_max(x, cols, lane);
    float s = 0.0f, tsum = 0.0f;
    for (int64_t c = lane; c < cols; c += kWarp) {
      s += expf(x[c] - mx);
      tsum += t[c];
    }
    const float lse = mx + logf(warp_sum(s));
    tsum = warp_sum(tsum);
    float l = 0.0f;
    for (int64_t c = lane; c < cols; c += kWarp) l += t[c] * (lse - x[c]);
    l = warp_sum(l);
    if (lane == 0) loss[r] = l;
    if (dlogits)
      for (int64_t c = lane; c < cols; c += kWarp) dlogits[r * cols + c] = tsum * expf(x[c] - lse) - t[c];
  }
}

__global__ void axpby_kernel(int64_t n, float alpha, const float* x, float beta, float* y) {
  STRATA_GRID_STRIDE(i, n) y[i] = beta == 0.0f ? alpha * x[i] : alpha * x[i] + beta * y[i];
}

__global__ void dropout_kernel(int64_t n, float rate, uint64_t seed, uint64_t stream, const int32_t* call, uint64_t counter,
                               const float* x, float* y, float* mask) {
  // The call number is read on the device, so a replayed graph draws a new mask.
  const uint64_t key = hash_combine(seed, (uint64_t{static_cast<uint32_t>(call[0])} << 16) ^ stream);
  const float scale = rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
  STRATA_GRID_STRIDE(i, n) {
    const float m = uniform01(key, counter + static_cast<uint64_t>(i)) >= rate ? scale : 0.0f;
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

__global__ void mul_kernel(int64_t n, const float* a, const float* b, float* y) {
  STRATA_GRID_STRIDE(i, n) y[i] = a[i] * b[i];
}

__global__ void scale_rows_kernel(const float* x, const float* scale, int64_t rows, int64_t cols, float* y) {
  STRATA_GRID_STRIDE(i, rows * cols) y[i] = scale[i / cols] * x[i];
}

__global__ void log_clamp_kernel(int64_t n, const float* x, float eps, float* y) {
  // Clamped like the CPU's Eigen max(eps).min(1 - eps): a NaN stays NaN (fmaxf
  // and fminf would drop it and give log(eps)).
  STRATA_GRID_STRIDE(i, n) {
    const float lo = x[i] < eps ? eps : x[i];
    y[i] = logf(1.0f - eps < lo ? 1.0f - eps : lo);
  }
}

__global__ void log_clamp_backward_kernel(int64_t n, const float* x, float eps, const float* dy, float* dx) {
  STRATA_GRID_STRIDE(i, n) dx[i] = (x[i] >= eps && x[i] <= 1.0f - eps) ? dy[i] / x[i] : 0.0f;
}

// One thread per 4 bytes where every row is a whole number of aligned words
// (labels; 784-byte images), per byte otherwise.
template <typename Word>
__global__ void gather_rows_kernel(const Word* table, int64_t row_words, const int32_t* rows, int64_t n, Word* out) {
  STRATA_GRID_STRIDE(i, n * row_words) {
    const int64_t r = i / row_words;
    out[i] = table[static_cast<int64_t>(rows[r]) * row_words + i % row_words];
  }
}

// Pixel value p of feature k as a model feature. Rounded intrinsics keep
// the compiler from fusing these into an FMA: the same bits as the CPU's
// (and Dataset::gather's) separate operations.
__device__ float pixel_to_float(uint8_t p, int64_t k, float scale, const float* mean, const float* inv_std) {
  const float v = __fmul_rn(static_cast<float>(p), scale);
  return mean ? __fmul_rn(__fsub_rn(v, mean[k]), inv_std[k]) : v;
}

__global__ void pixels_to_float_kernel(int64_t rows, int64_t features, const uint8_t* in, float scale,
                                       const float* mean, const float* inv_std, float* out) {
  STRATA_GRID_STRIDE(i, rows * features) out[i] = pixel_to_float(in[i], mean ? i % features : 0, scale, mean, inv_std);
}

// pixels_to_float of gather_rows, and the labels, in one pass: each thread
// converts kVec consecutive pixels of a row (4: one 32-bit load, one
// 128-bit store, where rows are whole words), the row's first also copies
// its label.
template <int kVec>
__global__ void gather_examples_kernel(const uint8_t* pixels, int64_t row_bytes, const int32_t* labels, const int32_t* rows,
                                       int64_t n, float scale, const float* mean, const float* inv_std, float* features,
                                       int32_t* labels_out) {
  const int64_t per_row = row_bytes / kVec;
  STRATA_GRID_STRIDE(i, n * per_row) {
    const int64_t r = i / per_row, k = (i % per_row) * kVec;
    const int64_t from = rows[r];
    if (k == 0) labels_out[r] = labels[from];
    uint8_t in[kVec];
    if constexpr (kVec == 4) {
      const uchar4 q = *reinterpret_cast<const uchar4*>(pixels + from * row_bytes + k);
      in[0] = q.x, in[1] = q.y, in[2] = q.z, in[3] = q.w;
    } else {
      in[0] = pixels[from * row_bytes + k];
    }
    float v[kVec];
    for (int j = 0; j < kVec; ++j) v[j] = pixel_to_float(in[j], k + j, scale, mean, inv_std);
    float* out = features + r * row_bytes + k;
    if constexpr (kVec == 4) *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
    else out[0] = v[0];
  }
}

// One block reduces a whole (short) vector: the per-example losses of a
// batch, its labels. A single launch, CUB's block reduction, double like the
// CPU. Launch bounds keep the compiler within 64 registers per thread, which
// 1024-thread blocks need.
constexpr int kReduceThreads = 1024;
using DoubleReduce = cub::BlockReduce<double, kReduceThreads>;
using IntReduce = cub::BlockReduce<long long, kReduceThreads>;

// out[0] = scale[0] * the sum of x, by the whole block (one block of kReduceThreads).
__device__ void block_scaled_sum(int64_t n, const float* x, const float* scale, float* out, DoubleReduce::TempStorage& temp) {
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kReduceThreads) s += x[i];
  s = DoubleReduce(temp).Sum(s);
  if (threadIdx.x == 0) out[0] = static_cast<float>(s * scale[0]);
}

__global__ void __launch_bounds__(kReduceThreads)
    scaled_sum_kernel(int64_t n, const float* x, const float* scale, float* out) {
  __shared__ typename DoubleReduce::TempStorage temp;
  block_scaled_sum(n, x, scale, out, temp);
}

__global__ void broadcast_scaled_kernel(int64_t n, const float* g, const float* scale, float* y) {
  const float v = g[0] * scale[0];
  STRATA_GRID_STRIDE(i, n) y[i] = v;
}

__global__ void add_scalar_kernel(int64_t n, float value, float* x) {
  STRATA_GRID_STRIDE(i, n) x[i] += value;
}

__global__ void increment_kernel(int64_t n, int32_t* x) {
  STRATA_GRID_STRIDE(i, n) x[i] = static_cast<int32_t>(static_cast<uint32_t>(x[i]) + 1u);
}

// The first column holding the row's largest value (the CPU's tie rule).
__device__ int32_t row_argmax(const float* p, int64_t cols) {
  int64_t best = 0;
  for (int64_t c = 1; c < cols; ++c)
    if (p[c] > p[best]) best = c;
  return static_cast<int32_t>(best);
}

__global__ void argmax_rows_kernel(const float* x, int64_t rows, int64_t cols, int32_t* out) {
  STRATA_GRID_STRIDE(r, rows) out[r] = row_argmax(x + r * cols, cols);
}

// The rows whose argmax is their label, counted by the whole block (one
// block of kReduceThreads); the total is thread 0's.
__device__ long long block_correct_rows(const float* predictions, const int32_t* labels, int64_t rows, int64_t cols,
                                        IntReduce::TempStorage& temp) {
  long long correct = 0;
  for (int64_t r = threadIdx.x; r < rows; r += kReduceThreads)
    correct += row_argmax(predictions + r * cols, cols) == labels[r];
  return IntReduce(temp).Sum(correct);
}

__global__ void __launch_bounds__(kReduceThreads)
count_correct_kernel(const float* predictions, const int32_t* labels, int64_t rows, int64_t cols,
                                     float* count) {
  __shared__ typename IntReduce::TempStorage temp;
  const long long correct = block_correct_rows(predictions, labels, rows, cols, temp);
  if (threadIdx.x == 0) count[0] += static_cast<float>(correct);
}

// Backend::gather_step_stats in one kernel: one block counts the correct
// rows while its first thread moves the loss and the error flag into stats
// and clears the flag.
__global__ void __launch_bounds__(kReduceThreads)
    gather_step_stats_kernel(const float* loss, const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                             float* error, float* stats) {
  __shared__ typename IntReduce::TempStorage temp;
  const long long correct = labels ? block_correct_rows(logits, labels, rows, cols, temp) : 0;
  if (threadIdx.x == 0) {
    stats[0] = loss[0];
    stats[1] = static_cast<float>(correct);
    stats[2] = error ? error[0] : 0.0f;
    stats[3] = error ? error[1] : 0.0f;
    if (error) error[0] = error[1] = 0.0f;
  }
}

// Backend::check_labels by the whole block (one block of kReduceThreads).
__device__ void block_check_labels(const int32_t* labels, int64_t n, int64_t classes, float* error,
                                   IntReduce::TempStorage& temp) {
  __shared__ long long bad_total;
  long long bad = 0, first = n;
  for (int64_t i = threadIdx.x; i < n; i += kReduceThreads)
    if (labels[i] < 0 || labels[i] >= classes) {
      ++bad;
      first = min(first, static_cast<long long>(i));
    }
  bad = IntReduce(temp).Sum(bad);
  if (threadIdx.x == 0) bad_total = bad;
  __syncthreads();
  first = IntReduce(temp).Reduce(first, ::cuda::minimum<>{});
  if (threadIdx.x == 0 && bad_total > 0) {
    // error[1] keeps the first bad label ever seen, error[0] counts them all.
    if (error[0] == 0.0f) error[1] = static_cast<float>(labels[first]);
    error[0] += static_cast<float>(bad_total);
  }
}

__global__ void __launch_bounds__(kReduceThreads)
    check_labels_kernel(const int32_t* labels, int64_t n, int64_t classes, float* error) {
  __shared__ typename IntReduce::TempStorage temp;
  block_check_labels(labels, n, classes, error, temp);
}

// Backend::sparse_softmax_xent_average of a small batch in one block: the
// labels checked, each row's loss and scaled gradient by a warp, then their
// scaled sum, each part computed as its own kernel computes it (the same
// bits). A warp takes its rows one after another, so this is for batches of
// a few rows per warp (kFusedLossRows) of few classes (kFusedLossElements:
// one SM reads them all, three times), where the step's time is its
// kernels' count; a wide output spreads over the GPU's blocks instead.
constexpr int64_t kFusedLossRows = 256, kFusedLossElements = 32768;

__global__ void __launch_bounds__(kReduceThreads)
    sparse_softmax_xent_average_kernel(const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                       const float* scale, float* error, float* loss, float* dlogits, float* total) {
  __shared__ union {
    IntReduce::TempStorage ints;
    DoubleReduce::TempStorage doubles;
  } temp;
  // temp.ints is free again after the barrier below, before temp.doubles is used.
  if (error) block_check_labels(labels, rows, cols, error, temp.ints);
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  for (int64_t r = warp; r < rows; r += kReduceThreads / kWarp)
    sparse_softmax_xent_row(logits, labels, r, cols, scale, loss, dlogits, lane);
  __syncthreads();  // every row's loss written (a block's global writes are visible to it after the barrier), temp free
  block_scaled_sum(rows, loss, scale, total, temp.doubles);
}

__global__ void sgd_kernel(int64_t n, float* w, const float* g, float* velocity, const float* lr_ptr, float momentum,
                           bool nesterov) {
  // Keras: v = momentum * v - lr * g; w += v (Nesterov: w += momentum * v - lr * g).
  const float lr = lr_ptr[0];
  STRATA_GRID_STRIDE(i, n) {
    if (momentum == 0.0f || velocity == nullptr) {
      w[i] -= lr * g[i];
    } else {
      const float v = momentum * velocity[i] - lr * g[i];
      velocity[i] = v;
      w[i] += nesterov ? momentum * v - lr * g[i] : v;
    }
  }
}

// Keras' formulation (as the CPU): the bias correction folds into the step
// size, computed once per block in double from the device-side step.
__device__ float adam_alpha(const AdamParams& p, const float* lr_step) {
  __shared__ float alpha;
  if (threadIdx.x == 0) {
    const double lr = lr_step[0], step = lr_step[1];
    const double b1t = pow(static_cast<double>(p.beta1), step), b2t = pow(static_cast<double>(p.beta2), step);
    alpha = static_cast<float>(lr * sqrt(1.0 - b2t) / (1.0 - b1t));
  }
  __syncthreads();
  return alpha;
}

__device__ inline void adam_element(float gi, float& m, float& v, float& w, float alpha, const AdamParams& p) {
  const float mi = m + (gi - m) * (1.0f - p.beta1);
  const float vi = v + (gi * gi - v) * (1.0f - p.beta2);
  m = mi;
  v = vi;
  w -= alpha * mi / (sqrtf(vi) + p.epsilon);
}

__global__ void adam_kernel(int64_t n, float* w, const float* g, float* m, float* v, AdamParams p, const float* lr_step) {
  const float alpha = adam_alpha(p, lr_step);
  STRATA_GRID_STRIDE(i, n) adam_element(g[i], m[i], v[i], w[i], alpha, p);
}

// Several tensors' Adam in one launch (PyTorch's multi_tensor_apply, by
// other means): the tensors are laid end to end in one index space and each
// thread, walking it upward, moves to the next tensor as it passes its end.
// The same arithmetic as adam_kernel, so the same bits.
constexpr int kAdamTensors = 24;  // 24 * 40 bytes of pointers and ends: well inside a launch's 4 KiB of arguments
struct AdamBatch {
  int count;
  int64_t end[kAdamTensors];  // each tensor's end in the joined index space
  float* w[kAdamTensors];
  const float* g[kAdamTensors];
  float* m[kAdamTensors];
  float* v[kAdamTensors];
};

__global__ void adam_many_kernel(AdamBatch b, AdamParams p, const float* lr_step) {
  const float alpha = adam_alpha(p, lr_step);
  int t = 0;
  STRATA_GRID_STRIDE(i, b.end[b.count - 1]) {
    while (i >= b.end[t]) ++t;
    const int64_t j = i - (t > 0 ? b.end[t - 1] : 0);
    adam_element(b.g[t][j], b.m[t][j], b.v[t][j], b.w[t][j], alpha, p);
  }
}

// One thread waits on the GPU's nanosecond clock (ConvolutionWays: the GPU
// kept busy while the host queues the work to be timed).
__global__ void spin_kernel(int64_t nanoseconds) {
  uint64_t start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < static_cast<uint64_t>(nanoseconds));
}

}  // namespace

// ---- launchers ------------------------------------------------------------------

void spin(cudaStream_t s, int64_t microseconds) {
  spin_kernel<<<1, 1, 0, s>>>(microseconds * 1000);
  STRATA_CUDA_LAUNCHED("spin");
}

void add_bias_rows(cudaStream_t s, float* y, const float* bias, int64_t rows, int64_t cols) {
  if (rows * cols == 0) return;
  add_bias_rows_kernel<<<blocks_for(rows * cols), kThreads, 0, s>>>(y, bias, rows, cols);
  STRATA_CUDA_LAUNCHED("add_bias_rows");
}

void fill32(cudaStream_t s, uint32_t* dst, int64_t n, uint32_t word) {
  if (n == 0) return;
  fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(dst, n, word);
  STRATA_CUDA_LAUNCHED("fill32");
}

void transpose(cudaStream_t s, const float* in, int64_t rows, int64_t cols, float* out, int64_t batch) {
  if (rows * cols * batch == 0) return;
  if (rows == 1 || cols == 1) {  // the same values in the same order (a one-channel image, a one-pixel kernel)
    STRATA_CUDA(
        cudaMemcpyAsync(out, in, static_cast<size_t>(rows * cols * batch) * sizeof(float), cudaMemcpyDeviceToDevice, s));
    return;
  }
  const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile),
                  static_cast<unsigned>(std::min<int64_t>((rows + kTile - 1) / kTile, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(batch, 65535)));
  transpose_kernel<<<grid, dim3(kTile, 8), 0, s>>>(in, rows, cols, batch, out);
  STRATA_CUDA_LAUNCHED("transpose");
}

void activation_forward(cudaStream_t s, Activation act, const float* x, float* y, int64_t rows, int64_t cols) {
  if (rows * cols == 0) return;
  if (act == Activation::Softmax) {
    softmax_kernel<<<row_blocks(rows), kThreads, 0, s>>>(x, y, rows, cols);
  } else {
    activation_forward_kernel<<<blocks_for(rows * cols), kThreads, 0, s>>>(act, x, y, rows * cols);
  }
  STRATA_CUDA_LAUNCHED("activation_forward");
}

void bias_activation(cudaStream_t s, Activation act, float* y, const float* bias, int64_t rows, int64_t cols) {
  if (rows * cols == 0) return;
  bias_activation_kernel<<<blocks_for(rows * cols), kThreads, 0, s>>>(act, y, bias, rows, cols);
  STRATA_CUDA_LAUNCHED("bias_activation");
}

void activation_backward(cudaStream_t s, Activation act, const float* y, const float* dy, float* dx, int64_t rows,
                         int64_t cols) {
  if (rows * cols == 0) return;
  if (act == Activation::Softmax) {
    softmax_backward_kernel<<<row_blocks(rows), kThreads, 0, s>>>(y, dy, dx, rows, cols);
  } else {
    activation_backward_kernel<<<blocks_for(rows * cols), kThreads, 0, s>>>(act, y, dy, dx, rows * cols);
  }
  STRATA_CUDA_LAUNCHED("activation_backward");
}

void sparse_softmax_xent(cudaStream_t s, const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                         float* loss, float* dlogits) {
  if (rows == 0) return;
  sparse_softmax_xent_kernel<<<row_blocks(rows), kThreads, 0, s>>>(logits, labels, rows, cols, nullptr, loss, dlogits);
  STRATA_CUDA_LAUNCHED("sparse_softmax_xent");
}

void sparse_softmax_xent_average(cudaStream_t s, const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                 const float* scale, float* error, float* loss, float* dlogits, float* total) {
  if (rows <= kFusedLossRows && rows * cols <= kFusedLossElements) {
    sparse_softmax_xent_average_kernel<<<1, kReduceThreads, 0, s>>>(logits, labels, rows, cols, scale, error, loss, dlogits,
                                                                    total);
    STRATA_CUDA_LAUNCHED("sparse_softmax_xent_average");
    return;
  }
  // Larger batches: three kernels, the scaling in the loss kernel's pass.
  if (error) check_labels(s, labels, rows, cols, error);
  sparse_softmax_xent_kernel<<<row_blocks(rows), kThreads, 0, s>>>(logits, labels, rows, cols, scale, loss, dlogits);
  STRATA_CUDA_LAUNCHED("sparse_softmax_xent");
  scaled_sum(s, rows, loss, scale, total);
}

void softmax_xent(cudaStream_t s, const float* logits, const float* targets, int64_t rows, int64_t cols, float* loss,
                  float* dlogits) {
  if (rows == 0) return;
  softmax_xent_kernel<<<row_blocks(rows), kThreads, 0, s>>>(logits, targets, rows, cols, loss, dlogits);
  STRATA_CUDA_LAUNCHED("softmax_xent");
}

void axpby(cudaStream_t s, int64_t n, float alpha, const float* x, float beta, float* y) {
  if (n == 0) return;
  axpby_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, alpha, x, beta, y);
  STRATA_CUDA_LAUNCHED("axpby");
}

void dropout(cudaStream_t s, int64_t n, float rate, uint64_t seed, uint64_t stream, const int32_t* call, uint64_t counter,
             const float* x, float* y, float* mask) {
  if (n == 0) return;
  dropout_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, rate, seed, stream, call, counter, x, y, mask);
  STRATA_CUDA_LAUNCHED("dropout");
}

void mul(cudaStream_t s, int64_t n, const float* a, const float* b, float* y) {
  if (n == 0) return;
  mul_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, a, b, y);
  STRATA_CUDA_LAUNCHED("mul");
}

void scale_rows(cudaStream_t s, const float* x, const float* scale, int64_t rows, int64_t cols, float* y) {
  if (rows * cols == 0) return;
  scale_rows_kernel<<<blocks_for(rows * cols), kThreads, 0, s>>>(x, scale, rows, cols, y);
  STRATA_CUDA_LAUNCHED("scale_rows");
}

void log_clamp(cudaStream_t s, int64_t n, const float* x, float eps, float* y) {
  if (n == 0) return;
  log_clamp_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, x, eps, y);
  STRATA_CUDA_LAUNCHED("log_clamp");
}

void log_clamp_backward(cudaStream_t s, int64_t n, const float* x, float eps, const float* dy, float* dx) {
  if (n == 0) return;
  log_clamp_backward_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, x, eps, dy, dx);
  STRATA_CUDA_LAUNCHED("log_clamp_backward");
}

void pixels_to_float(cudaStream_t s, int64_t rows, int64_t features, const uint8_t* in, float scale, const float* mean,
                     const float* inv_std, float* out) {
  if (rows * features == 0) return;
  pixels_to_float_kernel<<<blocks_for(rows * features), kThreads, 0, s>>>(rows, features, in, scale, mean, inv_std,
                                                                          out);
  STRATA_CUDA_LAUNCHED("pixels_to_float");
}

void gather_rows(cudaStream_t s, const uint8_t* table, int64_t row_bytes, const int32_t* rows, int64_t n, uint8_t* out) {
  if (n * row_bytes == 0) return;
  const bool words = row_bytes % 4 == 0 && reinterpret_cast<uintptr_t>(table) % 4 == 0 &&
                     reinterpret_cast<uintptr_t>(out) % 4 == 0;
  if (words) {
    const int64_t w = row_bytes / 4;
    gather_rows_kernel<<<blocks_for(n * w), kThreads, 0, s>>>(reinterpret_cast<const uint32_t*>(table), w, rows, n,
                                                              reinterpret_cast<uint32_t*>(out));
  } else {
    gather_rows_kernel<<<blocks_for(n * row_bytes), kThreads, 0, s>>>(table, row_bytes, rows, n, out);
  }
  STRATA_CUDA_LAUNCHED("gather_rows");
}

void gather_examples(cudaStream_t s, const uint8_t* pixels, int64_t row_bytes, const int32_t* labels, const int32_t* rows,
                     int64_t n, float scale, const float* mean, const float* inv_std, float* features, int32_t* labels_out) {
  if (n == 0) return;
  if (row_bytes == 0)
    return gather_rows(s, reinterpret_cast<const uint8_t*>(labels), sizeof(int32_t), rows, n,
                       reinterpret_cast<uint8_t*>(labels_out));
  const bool vectors = row_bytes % 4 == 0 && reinterpret_cast<uintptr_t>(pixels) % 4 == 0 &&
                       reinterpret_cast<uintptr_t>(features) % 16 == 0;
  if (vectors)
    gather_examples_kernel<4><<<blocks_for(n * row_bytes / 4), kThreads, 0, s>>>(pixels, row_bytes, labels, rows, n, scale,
                                                                                 mean, inv_std, features, labels_out);
  else
    gather_examples_kernel<1><<<blocks_for(n * row_bytes), kThreads, 0, s>>>(pixels, row_bytes, labels, rows, n, scale, mean,
                                                                             inv_std, features, labels_out);
  STRATA_CUDA_LAUNCHED("gather_examples");
}

void scaled_sum(cudaStream_t s, int64_t n, const float* x, const float* scale, float* out) {
  scaled_sum_kernel<<<1, kReduceThreads, 0, s>>>(n, x, scale, out);
  STRATA_CUDA_LAUNCHED("scaled_sum");
}

void broadcast_scaled(cudaStream_t s, int64_t n, const float* g, const float* scale, float* y) {
  if (n == 0) return;
  broadcast_scaled_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, g, scale, y);
  STRATA_CUDA_LAUNCHED("broadcast_scaled");
}

void add_scalar(cudaStream_t s, int64_t n, float value, float* x) {
  if (n == 0) return;
  add_scalar_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, value, x);
  STRATA_CUDA_LAUNCHED("add_scalar");
}

void increment(cudaStream_t s, int64_t n, int32_t* x) {
  if (n == 0) return;
  increment_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, x);
  STRATA_CUDA_LAUNCHED("increment");
}

void argmax_rows(cudaStream_t s, const float* x, int64_t rows, int64_t cols, int32_t* out) {
  if (rows == 0) return;
  argmax_rows_kernel<<<blocks_for(rows), kThreads, 0, s>>>(x, rows, cols, out);
  STRATA_CUDA_LAUNCHED("argmax_rows");
}

void count_correct(cudaStream_t s, const float* predictions, const int32_t* labels, int64_t rows, int64_t cols,
                   float* count) {
  if (rows == 0) return;
  count_correct_kernel<<<1, kReduceThreads, 0, s>>>(predictions, labels, rows, cols, count);
  STRATA_CUDA_LAUNCHED("count_correct");
}

void gather_step_stats(cudaStream_t s, const float* loss, const float* logits, const int32_t* labels, int64_t rows,
                       int64_t cols, float* error, float* stats) {
  gather_step_stats_kernel<<<1, kReduceThreads, 0, s>>>(loss, logits, labels, rows, cols, error, stats);
  STRATA_CUDA_LAUNCHED("gather_step_stats");
}

void check_labels(cudaStream_t s, const int32_t* labels, int64_t n, int64_t classes, float* error) {
  if (n == 0) return;
  check_labels_kernel<<<1, kReduceThreads, 0, s>>>(labels, n, classes, error);
  STRATA_CUDA_LAUNCHED("check_labels");
}

void sgd_update(cudaStream_t s, int64_t n, float* w, const float* g, float* velocity, const float* lr, float momentum,
                bool nesterov) {
  if (n == 0) return;
  sgd_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, w, g, velocity, lr, momentum, nesterov);
  STRATA_CUDA_LAUNCHED("sgd_update");
}

void adam_update(cudaStream_t s, int64_t n, float* w, const float* g, float* m, float* v, const AdamParams& p,
                 const float* lr_step) {
  if (n == 0) return;
  adam_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, w, g, m, v, p, lr_step);
  STRATA_CUDA_LAUNCHED("adam_update");
}

void adam_update_many(cudaStream_t s, std::span<const AdamTensor> tensors, const AdamParams& p, const float* lr_step) {
  for (size_t first = 0; first < tensors.size(); first += kAdamTensors) {
    AdamBatch b{};
    int64_t total = 0;
    for (size_t k = first; k < tensors.size() && b.count < kAdamTensors; ++k, ++b.count) {
      const AdamTensor& t = tensors[k];
      total += t.n;
      b.end[b.count] = total;
      b.w[b.count] = t.w;
      b.g[b.count] = t.g;
      b.m[b.count] = t.m;
      b.v[b.count] = t.v;
    }
    if (total == 0) continue;
    adam_many_kernel<<<blocks_for(total), kThreads, 0, s>>>(b, p, lr_step);
    STRATA_CUDA_LAUNCHED("adam_update_many");
  }
}

cudaError_t kernel_image_status() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, fill_kernel);
}

}  // namespace strata::cuda
