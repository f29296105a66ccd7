#pragma once
// Launchers of the CUDA backend's own kernels. Plain C++ declarations, so the
// host side (CudaBackend.cpp) is compiled by the C++ compiler and only the
// .cu files by nvcc. Every launcher queues its work on `s` and returns; none
// synchronises, allocates per call outside the stream-ordered pool, or reads
// device memory on the host, so a captured step (CUDA graph) replays them.
//
// Each kernel computes what the CPU backend computes (CpuBackend.cpp,
// CpuImageKernels.cpp), with the same tie rules (first maximum), the same
// accumulation precision (double where the CPU uses double) and the same
// counter-based random numbers, so the GPU check can compare them within
// float32 rounding. Each launcher checks its launch (CudaCheck.h).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "backend/Backend.h"

namespace strata::cuda {

// cudaSuccess when this build has machine code or PTX that the current GPU
// runs, else the runtime's error (cudaErrorNoKernelImageForDevice on a GPU
// older than the build's CMAKE_CUDA_ARCHITECTURES). Asked of one kernel: all
// are built for the same architectures.
cudaError_t kernel_image_status();

// ---- dense, element-wise and per-row (CudaKernels.cu) -------------------------
void add_bias_rows(cudaStream_t s, float* y, const float* bias, int64_t rows, int64_t cols);
void activation_forward(cudaStream_t s, Activation act, const float* x, float* y, int64_t rows, int64_t cols);
// y = act(y + bias) row-wise in one pass (not softmax).
void bias_activation(cudaStream_t s, Activation act, float* y, const float* bias, int64_t rows, int64_t cols);
void activation_backward(cudaStream_t s, Activation act, const float* y, const float* dy, float* dx, int64_t rows,
                         int64_t cols);
void sparse_softmax_xent(cudaStream_t s, const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                         float* loss, float* dlogits);
// Backend::sparse_softmax_xent_average: one kernel for batches of up to 256
// rows and 32,768 logits, three above either.
void sparse_softmax_xent_average(cudaStream_t s, const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                 const float* scale, float* error, float* loss, float* dlogits, float* total);
void softmax_xent(cudaStream_t s, const float* logits, const float* targets, int64_t rows, int64_t cols, float* loss,
                  float* dlogits);
void axpby(cudaStream_t s, int64_t n, float alpha, const float* x, float beta, float* y);
void dropout(cudaStream_t s, int64_t n, float rate, uint64_t seed, uint64_t stream, const int32_t* call, uint64_t counter,
             const float* x, float* y, float* mask);
void mul(cudaStream_t s, int64_t n, const float* a, const float* b, float* y);
void scale_rows(cudaStream_t s, const float* x, const float* scale, int64_t rows, int64_t cols, float* y);
void log_clamp(cudaStream_t s, int64_t n, const float* x, float eps, float* y);
void log_clamp_backward(cudaStream_t s, int64_t n, const float* x, float eps, const float* dy, float* dx);
void pixels_to_float(cudaStream_t s, int64_t rows, int64_t features, const uint8_t* in, float scale, const float* mean,
                     const float* inv_std, float* out);
void gather_rows(cudaStream_t s, const uint8_t* table, int64_t row_bytes, const int32_t* rows, int64_t n, uint8_t* out);
void gather_examples(cudaStream_t s, const uint8_t* pixels, int64_t row_bytes, const int32_t* labels, const int32_t* rows,
                     int64_t n, float scale, const float* mean, const float* inv_std, float* features, int32_t* labels_out);
void scaled_sum(cudaStream_t s, int64_t n, const float* x, const float* scale, float* out);
void broadcast_scaled(cudaStream_t s, int64_t n, const float* g, const float* scale, float* y);
void add_scalar(cudaStream_t s, int64_t n, float value, float* x);
void increment(cudaStream_t s, int64_t n, int32_t* x);
void argmax_rows(cudaStream_t s, const float* x, int64_t rows, int64_t cols, int32_t* out);
void count_correct(cudaStream_t s, const float* predictions, const int32_t* labels, int64_t rows, int64_t cols,
                   float* count);
void gather_step_stats(cudaStream_t s, const float* loss, const float* logits, const int32_t* labels, int64_t rows,
                       int64_t cols, float* error, float* stats);
void check_labels(cudaStream_t s, const int32_t* labels, int64_t n, int64_t classes, float* error);
void sgd_update(cudaStream_t s, int64_t n, float* w, const float* g, float* velocity, const float* lr, float momentum,
                bool nesterov);
// adam_update of every tensor, 24 to a launch.
void adam_update_many(cudaStream_t s, std::span<const AdamTensor> tensors, const AdamParams& p, const float* lr_step);
void adam_update(cudaStream_t s, int64_t n, float* w, const float* g, float* m, float* v, const AdamParams& p,
                 const float* lr_step);
void fill32(cudaStream_t s, uint32_t* dst, int64_t n, uint32_t word);
// Keeps the GPU busy (one thread) for `microseconds`: work queued after it
// starts no earlier.
void spin(cudaStream_t s, int64_t microseconds);
// out (cols, rows) = in (rows, cols) transposed, for each of `batch`
// matrices stored one after another.
void transpose(cudaStream_t s, const float* in, int64_t rows, int64_t cols, float* out, int64_t batch = 1);

// ---- images (CudaImageKernels.cu) ----------------------------------------------
void im2col(cudaStream_t s, const Window2D& w, const float* x, float* col);
void col2im(cudaStream_t s, const Window2D& w, const float* col, float* dx);
// bias optional; relu applied to each window's maximum.
void max_pool(cudaStream_t s, const Window2D& w, const float* x, const float* bias, bool relu, float* y, int32_t* argmax);
void max_pool_backward(cudaStream_t s, const Window2D& w, const float* dy, const int32_t* argmax, float* dx);
void avg_pool(cudaStream_t s, const Window2D& w, const float* x, float* y);
void avg_pool_backward(cudaStream_t s, const Window2D& w, const float* dy, float* dx);
// ---- per-channel kernels (CudaChannelKernels.cu) --------------------------------
// The per-channel reductions take a scratch area of device memory: partial
// sums of row blocks, combined in block order (the same bits on every run),
// and tickets that say which block combines them. The tickets must be zero
// before the first launch; each launch leaves them zero. One scratch per
// stream: launches on two streams at once would share tickets.
struct ReduceScratch {
  void* partials = nullptr;
  unsigned* tickets = nullptr;
};
struct ReduceScratchSize {
  size_t partial_bytes = 0, ticket_bytes = 0;
};
ReduceScratchSize channel_reduce_scratch_size(int64_t rows, int64_t channels);
void channel_sums(cudaStream_t s, const float* x, int64_t rows, int64_t channels, float* sum, float* sumsq,
                  const ReduceScratch& scratch);
void batch_norm_backward_reduce(cudaStream_t s, const float* dy, const float* x, int64_t rows, int64_t channels,
                                const float* mean, const float* inv_std, float* sum_dy, float* sum_dy_xhat,
                                const ReduceScratch& scratch);
// Backend::batch_norm_relu_backward_reduce in one pass.
void batch_norm_relu_backward_reduce(cudaStream_t s, const float* dy, const float* x, int64_t rows, int64_t channels,
                                     const float* mean, const float* inv_std, const float* gamma, const float* beta,
                                     float* sum_dz, float* sum_dz_xhat, const ReduceScratch& scratch);
// out = the column sums of x (plus out's values when accumulating), in double
// like the other reductions.
void sum_rows(cudaStream_t s, const float* x, int64_t rows, int64_t cols, float* out, bool accumulate,
              const ReduceScratch& scratch);
// dx = dy * act'(y) and dbias = its column sums, in one pass (not softmax).
void bias_activation_backward(cudaStream_t s, Activation act, const float* y, const float* dy, float* dx, float* dbias,
                              int64_t rows, int64_t cols, const ReduceScratch& scratch);
void batch_norm_stats(cudaStream_t s, const float* sums, int64_t channels, float epsilon, float* mean, float* inv_std);
void batch_norm_inference_stats(cudaStream_t s, const float* moving_mean, const float* moving_var, int64_t channels,
                                float epsilon, float* mean, float* inv_std);
void batch_norm_moving_update(cudaStream_t s, const float* mean, const float* inv_std, const float* count,
                              int64_t channels, float epsilon, float momentum, float* moving_mean, float* moving_var);
// relu: relu after, in the same pass (batch_norm_apply_relu).
void batch_norm_apply(cudaStream_t s, const float* x, int64_t rows, int64_t channels, const float* mean, const float* inv_std,
                      const float* gamma, const float* beta, float* y, bool relu = false);
// relu: of the relu's gradient as batch_norm_relu_backward_reduce takes it
// (batch_norm_relu_backward_apply; beta is read only then).
void batch_norm_backward_apply(cudaStream_t s, const float* dy, const float* x, int64_t rows, int64_t channels,
                               const float* mean, const float* inv_std, const float* gamma, const float* beta,
                               const float* sum_dy, const float* sum_dy_xhat, const float* count, float* dx,
                               bool relu = false);

}  // namespace strata::cuda
