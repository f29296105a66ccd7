#pragma once
#include <memory>

#include "backend/Backend.h"
#include "core/ThreadPool.h"

namespace strata {

class DnnlConvolution;

// Eigen kernels on a private thread pool. Eigen's own threading is off
// (EIGEN_DONT_PARALLELIZE): we split the output ourselves, so a replica thread
// uses exactly its share of cores and the split, hence the rounding, depends
// only on the thread count.
class CpuBackend final : public Backend {
public:
  explicit CpuBackend(int threads, int device_index = 0);
  ~CpuBackend() override;
  Device device() const override { return Device{DeviceKind::Cpu, device_index_}; }
  int threads() const override { return pool_.size(); }

  // Host memory: every call completes before it returns.
  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void fill32(void* dst, int64_t n, uint32_t word) override;
  void synchronize() override {}
  EventPtr record_event() override { return nullptr; }
  void wait_event(const EventPtr&) override {}
  float* label_error_flag() override { return label_error_; }

  void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, const float* b,
            float beta, float* c) override;
  void add_bias_rows(float* y, const float* bias, int64_t rows, int64_t cols) override;
  void sum_rows(const float* x, int64_t rows, int64_t cols, float* out, bool accumulate) override;
  void activation_forward(Activation act, const float* x, float* y, int64_t rows, int64_t cols) override;
  void activation_backward(Activation act, const float* y, const float* dy, float* dx, int64_t rows,
                           int64_t cols) override;
  void sparse_softmax_xent(const float* logits, const int32_t* labels, int64_t rows, int64_t cols, float* loss,
                           float* dlogits) override;
  void softmax_xent(const float* logits, const float* targets, int64_t rows, int64_t cols, float* loss,
                    float* dlogits) override;
  void axpby(int64_t n, float alpha, const float* x, float beta, float* y) override;
  void dropout(int64_t n, float rate, uint64_t seed, uint64_t stream, const int32_t* call, uint64_t counter, const float* x,
               float* y, float* mask) override;
  void mul(int64_t n, const float* a, const float* b, float* y) override;
  void scale_rows(const float* x, const float* scale, int64_t rows, int64_t cols, float* y) override;
  void log_clamp(int64_t n, const float* x, float eps, float* y) override;
  void log_clamp_backward(int64_t n, const float* x, float eps, const float* dy, float* dx) override;
  void pixels_to_float(int64_t rows, int64_t features, const uint8_t* in, float scale, const float* mean,
                       const float* inv_std, float* out) override;
  void gather_rows(const uint8_t* table, int64_t row_bytes, const int32_t* rows, int64_t n, uint8_t* out) override;
  void scaled_sum(int64_t n, const float* x, const float* scale, float* out) override;
  void broadcast_scaled(int64_t n, const float* g, const float* scale, float* y) override;
  void add_scalar(int64_t n, float value, float* x) override;
  void increment(int64_t n, int32_t* x) override;
  void argmax_rows(const float* x, int64_t rows, int64_t cols, int32_t* out) override;
  void count_correct(const float* predictions, const int32_t* labels, int64_t rows, int64_t cols, float* count) override;
  void check_labels(const int32_t* labels, int64_t n, int64_t classes, float* error) override;
  void im2col(const Window2D& w, const float* x, float* col) override;
  void col2im(const Window2D& w, const float* col, float* dx) override;
  void max_pool(const Window2D& w, const float* x, const float* bias, Activation act, float* y, int32_t* argmax) override;
  void max_pool_backward(const Window2D& w, const float* dy, const int32_t* argmax, float* dx) override;
  void avg_pool(const Window2D& w, const float* x, float* y) override;
  void avg_pool_backward(const Window2D& w, const float* dy, float* dx) override;
  // With oneDNN in the build (STRATA_WITH_DNNL): convolutions in one call,
  // without the patch matrix; otherwise im2col + gemm (Backend's defaults).
  bool has_conv2d(const Window2D& w, int64_t filters) override;
  void conv2d(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) override;
  void conv2d_backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx) override;
  void conv2d_backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy, float* dkernel) override;
  void channel_sums(const float* x, int64_t rows, int64_t channels, float* sum, float* sumsq) override;
  void batch_norm_stats(const float* sums, int64_t channels, float epsilon, float* mean, float* inv_std) override;
  void batch_norm_inference_stats(const float* moving_mean, const float* moving_var, int64_t channels, float epsilon,
                                  float* mean, float* inv_std) override;
  void batch_norm_moving_update(const float* mean, const float* inv_std, const float* count, int64_t channels,
                                float epsilon, float momentum, float* moving_mean, float* moving_var) override;
  void batch_norm_apply(const float* x, int64_t rows, int64_t channels, const float* mean, const float* inv_std,
                        const float* gamma, const float* beta, float* y) override;
  void batch_norm_apply_relu(const float* x, int64_t rows, int64_t channels, const float* mean, const float* inv_std,
                             const float* gamma, const float* beta, float* y) override;
  void batch_norm_relu_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                                       const float* inv_std, const float* gamma, const float* beta, float* sum_dz,
                                       float* sum_dz_xhat) override;
  void batch_norm_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                                  const float* inv_std, float* sum_dy, float* sum_dy_xhat) override;
  void batch_norm_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                                 const float* inv_std, const float* gamma, const float* sum_dy,
                                 const float* sum_dy_xhat, const float* count, float* dx) override;
  void batch_norm_relu_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                                      const float* inv_std, const float* gamma, const float* beta, const float* sum_dz,
                                      const float* sum_dz_xhat, const float* count, float* dx) override;
  void sgd_update(int64_t n, float* w, const float* g, float* velocity, const float* lr, float momentum, bool nesterov,
                  WeightStores stores) override;
  void adam_update(int64_t n, float* w, const float* g, float* m, float* v, const AdamParams& p, const float* lr_step,
                   WeightStores stores) override;

  ThreadPool& pool() { return pool_; }

private:
  ThreadPool pool_;
  int device_index_;
  // Null without oneDNN. A shared_ptr, whose deleter is bound where it is
  // made: a build without oneDNN has no DnnlConvolution to destroy.
  std::shared_ptr<DnnlConvolution> dnnl_;
  float label_error_[2] = {0.0f, 0.0f};
};

}  // namespace strata
