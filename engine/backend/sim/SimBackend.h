#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "backend/Backend.h"
#include "backend/cpu/CpuBackend.h"
#include "backend/sim/SimArena.h"
#include "backend/sim/SimStream.h"

namespace strata {

// The strict simulated accelerator, device kind `sim`: the CPU kernels, run
// asynchronously in order on the device's own thread (its stream) against
// memory of its own arena that host code cannot touch. Every pointer handed to
// a kernel must be device memory of a sim device (peers allowed, as GPUs with
// peer access), so a host pointer slipped into a kernel is an error at the
// call, and a device pointer dereferenced on the host faults. It exists so the
// engine's device discipline is tested on machines without a GPU.
class SimBackend final : public Backend {
public:
  explicit SimBackend(int index);
  ~SimBackend() override;
  Device device() const override { return Device{DeviceKind::Sim, index_}; }
  int threads() const override { return 1; }

  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void fill32(void* dst, int64_t n, uint32_t word) override;
  void synchronize() override;
  EventPtr record_event() override { return current().record(); }
  void wait_event(const EventPtr& event) override { current().wait(event); }
  void wait_host(const EventPtr& event) override;
  EventPtr record_timing_mark() override { return current().record_timing_mark(); }
  std::optional<MarkedSpan> span_time_us(const EventPtr& begin, const EventPtr& end) override;
  float* label_error_flag() override { return label_error_; }
  const SimArena& arena() const { return arena_; }
  bool supports_capture() const override { return true; }
  void begin_capture() override;
  GraphPtr end_capture() override;
  void replay(const GraphPtr& graph) override;

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
  // As a GPU with cuDNN: layers convolve in one call, which sim computes by
  // Backend's default (im2col, gemm, col2im on its stream), so the one-call
  // path is tested and still gives the CPU's bits.
  bool has_conv2d(const Window2D&, int64_t) override { return true; }
  // Two of a GPU's ways (CudaBackend's ConvolutionWays): the whole batch's
  // patch matrix, which runs unless another is forced (the CPU's bits), and
  // slices of kSliceImages images, so the slicing's arithmetic is checked here.
  std::vector<std::string> convolution_ways(const Window2D& w, int64_t filters, ConvolutionDirection d) override;
  void force_convolution_way(const std::string& way) override { sliced_ = way == "im2col-slices"; }
  void conv2d(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) override;
  Tensor conv2d_keeping_patches(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) override;
  void conv2d_backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx) override;
  void conv2d_backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy, float* dkernel) override;
  void max_pool(const Window2D& w, const float* x, const float* bias, Activation act, float* y, int32_t* argmax) override;
  void max_pool_backward(const Window2D& w, const float* dy, const int32_t* argmax, float* dx) override;
  void avg_pool(const Window2D& w, const float* x, float* y) override;
  void avg_pool_backward(const Window2D& w, const float* dy, float* dx) override;
  void channel_sums(const float* x, int64_t rows, int64_t channels, float* sum, float* sumsq) override;
  void batch_norm_stats(const float* sums, int64_t channels, float epsilon, float* mean, float* inv_std) override;
  void batch_norm_inference_stats(const float* moving_mean, const float* moving_var, int64_t channels, float epsilon,
                                  float* mean, float* inv_std) override;
  void batch_norm_moving_update(const float* mean, const float* inv_std, const float* count, int64_t channels,
                                float epsilon, float momentum, float* moving_mean, float* moving_var) override;
  void batch_norm_apply(const float* x, int64_t rows, int64_t channels, const float* mean, const float* inv_std,
                        const float* gamma, const float* beta, float* y) override;
  void batch_norm_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                                  const float* inv_std, float* sum_dy, float* sum_dy_xhat) override;
  void batch_norm_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                                 const float* inv_std, const float* gamma, const float* sum_dy,
                                 const float* sum_dy_xhat, const float* count, float* dx) override;
  void batch_norm_relu_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                                       const float* inv_std, const float* gamma, const float* beta, float* sum_dz,
                                       float* sum_dz_xhat) override;
  void batch_norm_relu_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                                      const float* inv_std, const float* gamma, const float* beta, const float* sum_dz,
                                      const float* sum_dz_xhat, const float* count, float* dx) override;
  void sgd_update(int64_t n, float* w, const float* g, float* velocity, const float* lr, float momentum, bool nesterov,
                  WeightStores stores) override;
  void adam_update(int64_t n, float* w, const float* g, float* m, float* v, const AdamParams& p, const float* lr_step,
                   WeightStores stores) override;
  // A side branch is a second stream with a thread of its own (and its own
  // CPU kernels' state), forked and joined by events as CUDA's: a branch's
  // work really runs beside the main stream's, so a step that reads a
  // gradient before the join, or frees memory the branch still uses, goes
  // wrong here too. Memory freed inside a branch returns to the arena in the
  // branch's order. Inside a capture the side stream joins it and the graph
  // holds both streams' work, replayed beside each other with their fork
  // and join; a branch left unjoined fails the capture's end.
  void allow_branches(bool allowed) override { branch_allowances_ += allowed ? 1 : -1; }
  void begin_branch() override;
  void end_branch() noexcept override;
  void join_branch() noexcept override;

private:
  static constexpr int64_t kSliceImages = 3;
  bool sliced_ = false;  // set between calls, by the checks
  int64_t slice_images(const Window2D& w) const { return sliced_ ? kSliceImages : w.batch; }
  // The device thread's view of a kernel argument; throws (on the calling
  // host thread) when it is not sim device memory.
  template <typename T>
  T* view(T* p, const char* op) const;
  // Queues a kernel on the calling thread's stream, given that stream's CPU kernels.
  void run(std::function<void(CpuBackend&)> op);
  // The stream and kernels the calling thread's work goes to: the side
  // branch's inside one (begin_branch), else the main ones.
  bool in_branch() const;
  SimStream& current() { return in_branch() ? side_ : stream_; }
  void poison(void* p, size_t bytes);

  // Memory during a capture, as CUDA's graph memory: blocks allocated while
  // capturing belong to the graph (one freed during the capture serves a
  // later allocation of it, never anyone else), and are returned when the
  // graph is destroyed.
  struct Capture {
    std::set<void*> live;
    std::multimap<size_t, void*> free;
    std::vector<std::pair<void*, size_t>> owned;
    // Older memory freed while capturing: a graph cannot free what it did not
    // allocate (CUDA refuses such a free node), and its replays still use
    // it, so it is returned with the graph.
    std::vector<std::pair<void*, size_t>> deferred;
    // Blocks freed inside a branch forked during the capture: free for the
    // main stream's allocations once the branch is joined.
    std::multimap<size_t, void*> branch_freed;
    std::set<void*> before_fork;  // the blocks `free` held when the open branch forked
    // Forked during the capture, not yet joined. No default member
    // initializer: clang then finds Capture not default-constructible inside
    // SimBackend (std::optional<Capture>::emplace()); emplace() value-
    // initializes it, which makes this false.
    bool branch_open;
  };
  // During a capture, under capture_mutex_: a freed block of `bytes` the
  // calling thread may take, taken out of the free lists (nullptr: none).
  // The main stream takes any; a branch its own, or one freed before its
  // fork.
  void* take_freed(size_t bytes);
  std::mutex capture_mutex_;
  std::optional<Capture> capture_;

  int index_;
  SimArena arena_;
  CpuBackend cpu_;
  SimStream stream_;
  CpuBackend side_cpu_;
  SimStream side_;
  std::atomic<int> branch_allowances_{0};  // allow_branches(true) less allow_branches(false)
  // A branch begun and not yet joined, by one thread (as CUDA's): another
  // thread's begin_branch meanwhile stays on the main stream.
  std::atomic<bool> side_busy_{false};
  float* label_error_ = nullptr;
};

}  // namespace strata
