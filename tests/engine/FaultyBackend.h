#pragma once
// A device backend with deliberate bugs, for proving that the GPU check's op
// comparison catches them: it forwards every call to a real backend (a sim
// device's) except where a named fault bends the arguments, the way a wrong
// CUDA kernel would compute something close to, but not, the contract.
// Step capture is not forwarded: the op checks never capture.
#include <set>
#include <string>
#include <vector>

#include "backend/Backend.h"

class FaultyBackend final : public strata::Backend {
public:
  FaultyBackend(strata::Backend& inner, std::set<std::string> faults) : in_(inner), faults_(std::move(faults)) {}
  bool has(const char* fault) const { return faults_.count(fault) > 0; }

  strata::Device device() const override { return in_.device(); }
  int threads() const override { return in_.threads(); }
  void* allocate(size_t bytes) override { return in_.allocate(bytes); }
  void deallocate(void* p, size_t bytes) override { in_.deallocate(p, bytes); }
  void copy_from_host(void* dst, const void* src, size_t bytes) override { in_.copy_from_host(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override { in_.copy_to_host(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override { in_.copy(dst, src, bytes); }
  void fill32(void* dst, int64_t n, uint32_t word) override { in_.fill32(dst, n, word); }
  void synchronize() override { in_.synchronize(); }
  strata::EventPtr record_event() override { return in_.record_event(); }
  void wait_event(const strata::EventPtr& e) override { in_.wait_event(e); }
  float* label_error_flag() override { return in_.label_error_flag(); }

  void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, const float* b, float beta,
            float* c) override {
    if (k == 0 && has("gemm_skips_empty_product")) return;  // C keeps its poison instead of becoming 0
    in_.gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
  }
  void add_bias_rows(float* y, const float* bias, int64_t rows, int64_t cols) override { in_.add_bias_rows(y, bias, rows, cols); }
  void sum_rows(const float* x, int64_t rows, int64_t cols, float* out, bool accumulate) override {
    in_.sum_rows(x, rows, cols, out, has("sum_rows_overwrites") ? false : accumulate);
  }
  void activation_forward(strata::Activation act, const float* x, float* y, int64_t rows, int64_t cols) override {
    if (act == strata::Activation::Sigmoid && has("sigmoid_is_tanh")) act = strata::Activation::Tanh;
    in_.activation_forward(act, x, y, rows, cols);
  }
  void activation_backward(strata::Activation act, const float* y, const float* dy, float* dx, int64_t rows,
                           int64_t cols) override {
    in_.activation_backward(act, y, dy, dx, rows, cols);
  }
  void sparse_softmax_xent(const float* logits, const int32_t* labels, int64_t rows, int64_t cols, float* loss,
                           float* dlogits) override {
    in_.sparse_softmax_xent(logits, labels, rows, cols, loss, dlogits);
  }
  void softmax_xent(const float* logits, const float* targets, int64_t rows, int64_t cols, float* loss,
                    float* dlogits) override {
    in_.softmax_xent(logits, targets, rows, cols, loss, dlogits);
  }
  void axpby(int64_t n, float alpha, const float* x, float beta, float* y) override { in_.axpby(n, alpha, x, beta, y); }
  void dropout(int64_t n, float rate, uint64_t seed, uint64_t stream, const int32_t* call, uint64_t counter, const float* x,
               float* y, float* mask) override {
    in_.dropout(n, rate, seed, stream, call, has("dropout_counter_off_by_one") ? counter + 1 : counter, x, y, mask);
  }
  void mul(int64_t n, const float* a, const float* b, float* y) override { in_.mul(n, a, b, y); }
  void scale_rows(const float* x, const float* scale, int64_t rows, int64_t cols, float* y) override {
    in_.scale_rows(x, scale, rows, cols, y);
  }
  void log_clamp(int64_t n, const float* x, float eps, float* y) override { in_.log_clamp(n, x, eps, y); }
  void log_clamp_backward(int64_t n, const float* x, float eps, const float* dy, float* dx) override {
    in_.log_clamp_backward(n, x, eps, dy, dx);
  }
  void pixels_to_float(int64_t rows, int64_t features, const uint8_t* in, float scale, const float* mean,
                       const float* inv_std, float* out) override {
    in_.pixels_to_float(rows, features, in, scale, mean, inv_std, out);
  }
  void gather_rows(const uint8_t* table, int64_t row_bytes, const int32_t* rows, int64_t n, uint8_t* out) override {
    in_.gather_rows(table, row_bytes, rows, n, out);
  }
  void scaled_sum(int64_t n, const float* x, const float* scale, float* out) override { in_.scaled_sum(n, x, scale, out); }
  void broadcast_scaled(int64_t n, const float* g, const float* scale, float* y) override {
    in_.broadcast_scaled(n, g, scale, y);
  }
  void add_scalar(int64_t n, float value, float* x) override { in_.add_scalar(n, value, x); }
  void increment(int64_t n, int32_t* x) override { in_.increment(n, x); }
  void argmax_rows(const float* x, int64_t rows, int64_t cols, int32_t* out) override {
    // Only the last row's result goes missing (its output keeps the poison).
    in_.argmax_rows(x, has("argmax_misses_last_row") && rows > 1 ? rows - 1 : rows, cols, out);
  }
  void count_correct(const float* predictions, const int32_t* labels, int64_t rows, int64_t cols, float* count) override {
    in_.count_correct(predictions, labels, rows, cols, count);
  }
  void check_labels(const int32_t* labels, int64_t n, int64_t classes, float* error) override {
    in_.check_labels(labels, n, has("check_labels_off_by_one") ? classes - 1 : classes, error);
  }
  void im2col(const strata::Window2D& w, const float* x, float* col) override { in_.im2col(w, x, col); }
  // The wrapped device's, which keeps the patch matrix as its im2col way does.
  strata::Tensor conv2d_keeping_patches(const strata::Window2D& w, int64_t filters, const float* x, const float* kernel,
                                        float* y) override {
    return in_.conv2d_keeping_patches(w, filters, x, kernel, y);
  }
  void col2im(const strata::Window2D& w, const float* col, float* dx) override { in_.col2im(w, col, dx); }
  // "partial_way": a convolution way ("partial", computing as the defaults
  // do) offered for the forward pass and the input gradient only, as cuDNN
  // offers a shape whose kernel gradient it has no algorithm for;
  // "partial_way_refuses": the same way listed for every direction but
  // refusing the kernel gradient, as cuDNN refusing a call at run time.
  // A forced call the way does not run counts as a refusal either way.
  std::vector<std::string> convolution_ways(const strata::Window2D& w, int64_t filters, ConvolutionDirection d) override {
    std::vector<std::string> ways = in_.convolution_ways(w, filters, d);
    if (has("partial_way_refuses") || (has("partial_way") && d != ConvolutionDirection::BackwardFilter))
      ways.insert(ways.begin(), "partial");
    return ways;
  }
  void force_convolution_way(const std::string& way) override {
    forced_ = way;
    in_.force_convolution_way(way == "partial" ? "" : way);
  }
  int64_t forced_convolution_refusals() const override { return refusals_ + in_.forced_convolution_refusals(); }
  void conv2d_backward_filter(const strata::Window2D& w, int64_t filters, const float* x, const float* dy,
                              float* dkernel) override {
    if (forced_ == "partial") ++refusals_;
    Backend::conv2d_backward_filter(w, filters, x, dy, dkernel);
  }
  void max_pool(const strata::Window2D& w, const float* x, const float* bias, strata::Activation act, float* y,
                int32_t* argmax) override {
    in_.max_pool(w, x, bias, act, y, argmax);
  }
  void max_pool_backward(const strata::Window2D& w, const float* dy, const int32_t* argmax, float* dx) override {
    in_.max_pool_backward(w, dy, argmax, dx);
  }
  void avg_pool(const strata::Window2D& w, const float* x, float* y) override { in_.avg_pool(w, x, y); }
  void avg_pool_backward(const strata::Window2D& w, const float* dy, float* dx) override { in_.avg_pool_backward(w, dy, dx); }
  void channel_sums(const float* x, int64_t rows, int64_t channels, float* sum, float* sumsq) override {
    in_.channel_sums(x, rows, channels, sum, sumsq);
  }
  void batch_norm_stats(const float* sums, int64_t channels, float epsilon, float* mean, float* inv_std) override {
    in_.batch_norm_stats(sums, channels, epsilon, mean, inv_std);
  }
  void batch_norm_inference_stats(const float* moving_mean, const float* moving_var, int64_t channels, float epsilon,
                                  float* mean, float* inv_std) override {
    in_.batch_norm_inference_stats(moving_mean, moving_var, channels, epsilon, mean, inv_std);
  }
  void batch_norm_moving_update(const float* mean, const float* inv_std, const float* count, int64_t channels,
                                float epsilon, float momentum, float* moving_mean, float* moving_var) override {
    in_.batch_norm_moving_update(mean, inv_std, count, channels, epsilon, momentum, moving_mean, moving_var);
  }
  void batch_norm_apply(const float* x, int64_t rows, int64_t channels, const float* mean, const float* inv_std,
                        const float* gamma, const float* beta, float* y) override {
    in_.batch_norm_apply(x, rows, channels, mean, inv_std, gamma, beta, y);
  }
  void batch_norm_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                                  const float* inv_std, float* sum_dy, float* sum_dy_xhat) override {
    in_.batch_norm_backward_reduce(dy, x, rows, channels, mean, inv_std, sum_dy, sum_dy_xhat);
  }
  void batch_norm_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                                 const float* inv_std, const float* gamma, const float* sum_dy, const float* sum_dy_xhat,
                                 const float* count, float* dx) override {
    in_.batch_norm_backward_apply(dy, x, rows, channels, mean, inv_std, gamma, sum_dy, sum_dy_xhat, count, dx);
  }
  void batch_norm_relu_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                                       const float* inv_std, const float* gamma, const float* beta, float* sum_dz,
                                       float* sum_dz_xhat) override {
    in_.batch_norm_relu_backward_reduce(dy, x, rows, channels, mean, inv_std, gamma, beta, sum_dz, sum_dz_xhat);
  }
  void batch_norm_relu_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                                      const float* inv_std, const float* gamma, const float* beta, const float* sum_dz,
                                      const float* sum_dz_xhat, const float* count, float* dx) override {
    in_.batch_norm_relu_backward_apply(dy, x, rows, channels, mean, inv_std, gamma, beta, sum_dz, sum_dz_xhat, count, dx);
  }
  void sgd_update(int64_t n, float* w, const float* g, float* velocity, const float* lr, float momentum, bool nesterov,
                  strata::WeightStores stores) override {
    in_.sgd_update(n, w, g, velocity, lr, momentum, has("sgd_ignores_nesterov") ? false : nesterov, stores);
  }
  void adam_update(int64_t n, float* w, const float* g, float* m, float* v, const strata::AdamParams& p, const float* lr_step,
                   strata::WeightStores stores) override {
    strata::AdamParams q = p;
    // A float32 rounding of beta2 that a careless kernel might make: 0.999 -> 0.9989.
    if (has("adam_beta2_rounded")) q.beta2 = 0.9989f;
    in_.adam_update(n, w, g, m, v, q, lr_step, stores);
  }

private:
  strata::Backend& in_;
  std::set<std::string> faults_;
  std::string forced_;    // the convolution way forced ("": none)
  int64_t refusals_ = 0;  // forced calls "partial" did not run
};
