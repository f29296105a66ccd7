#pragma once
#include <cuda_runtime_api.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backend/Backend.h"
#include "backend/cuda/ConvolutionWays.h"
#include "backend/cuda/CublasLtGemm.h"
#include "backend/cuda/PinnedStaging.h"
#include "core/Error.h"
#include "core/Tensor.h"

namespace strata {
namespace cuda {
class CudnnConvolver;
struct ReduceScratch;
struct ReduceScratchSize;
}

// One NVIDIA GPU, device kind `gpu`. Every call is queued on the device's
// stream and returns at once; the host waits only in synchronize() (and for
// copies to pageable host memory). Memory comes from the device's
// stream-ordered pool (cudaMallocAsync), kept instead of returned to the
// driver, so a step after the first allocates nothing from the system.
// Matrix products go to cuBLASLt, everything else to the kernels in
// CudaKernels.cu / CudaImageKernels.cu, which compute what the CPU backend
// computes.
//
// The stream is shared by every thread that uses the device (replicas that
// share a GPU are ordered by it, like sim's single stream), and each call
// first makes this GPU the calling thread's current device.
class CudaBackend final : public Backend {
public:
  // Throws bad_input naming the device when it does not exist.
  explicit CudaBackend(int index);
  ~CudaBackend() override;
  Device device() const override { return Device{DeviceKind::Gpu, index_}; }
  int threads() const override { return 1; }
  cudaStream_t stream() const { return stream_; }
  const std::string& name() const { return name_; }
  // The device the calling thread's CUDA calls go to, as the backends set it
  // (-1: none set on this thread yet; cudaGetDevice would say 0 there, and
  // setting 0 would make a context on a GPU the run may not use).
  static int thread_device();
  // Makes `index` the calling thread's device, as a backend's call does.
  static cudaError_t set_thread_device(int index);
  // Events no one holds, for the next records of their kind (timing marks, or
  // events that order streams); they outlive the backend with the records.
  struct SpareEvents {
    std::mutex mutex;
    std::vector<cudaEvent_t> events;
    ~SpareEvents();
  };

  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void fill32(void* dst, int64_t n, uint32_t word) override;
  void synchronize() override;
  void pin_host_memory(void* p, size_t bytes) override;
  void unpin_host_memory(void* p) override;
  EventPtr record_event() override;
  void wait_event(const EventPtr& event) override;
  void wait_host(const EventPtr& event) override;
  // Timed events (recorded as external event nodes while capturing, so a
  // replay records them again), put on the host's clock through a reference
  // event whose host time is measured (calibrate_clock).
  EventPtr record_timing_mark() override;
  // The same on another stream of this GPU (NCCL's communication stream):
  // span_time_us reads it as it reads the compute stream's.
  EventPtr record_timing_mark_on(cudaStream_t stream);
  std::optional<MarkedSpan> span_time_us(const EventPtr& begin, const EventPtr& end) override;
  float* label_error_flag() override { return label_error_; }
  // CUDA graphs: the stream is captured (relaxed mode, so other threads'
  // unrelated CUDA calls stay legal), allocations become the graph's memory
  // nodes, and replay() is one cudaGraphLaunch.
  bool supports_capture() const override { return true; }
  void begin_capture() override;
  GraphPtr end_capture() override;
  void replay(const GraphPtr& graph) override;

  void gemm_bias(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                 const float* bias, float* c) override;
  void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, const float* b,
            float beta, float* c) override;
  void add_bias_rows(float* y, const float* bias, int64_t rows, int64_t cols) override;
  void sum_rows(const float* x, int64_t rows, int64_t cols, float* out, bool accumulate) override;
  void activation_forward(Activation act, const float* x, float* y, int64_t rows, int64_t cols) override;
  void bias_activation(Activation act, float* y, const float* bias, int64_t rows, int64_t cols) override;
  void activation_backward(Activation act, const float* y, const float* dy, float* dx, int64_t rows,
                           int64_t cols) override;
  void bias_activation_backward(Activation act, const float* y, const float* dy, float* dx, float* dbias, int64_t rows,
                                int64_t cols) override;
  void sparse_softmax_xent(const float* logits, const int32_t* labels, int64_t rows, int64_t cols, float* loss,
                           float* dlogits) override;
  void sparse_softmax_xent_average(const float* logits, const int32_t* labels, int64_t rows, int64_t cols, const float* scale,
                                   float* error, float* loss, float* dlogits, float* total) override;
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
  void gather_examples(const uint8_t* pixels, int64_t row_bytes, const int32_t* labels, const int32_t* rows, int64_t n,
                       float scale, const float* mean, const float* inv_std, float* features, int32_t* labels_out) override;
  void scaled_sum(int64_t n, const float* x, const float* scale, float* out) override;
  void broadcast_scaled(int64_t n, const float* g, const float* scale, float* y) override;
  void add_scalar(int64_t n, float value, float* x) override;
  void increment(int64_t n, int32_t* x) override;
  void argmax_rows(const float* x, int64_t rows, int64_t cols, int32_t* out) override;
  void count_correct(const float* predictions, const int32_t* labels, int64_t rows, int64_t cols, float* count) override;
  void gather_step_stats(const float* loss, const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                         float* error, float* stats) override;
  void check_labels(const int32_t* labels, int64_t n, int64_t classes, float* error) override;
  void im2col(const Window2D& w, const float* x, float* col) override;
  void col2im(const Window2D& w, const float* col, float* dx) override;
  // Where the window has a way beside whole-batch im2col in some direction
  // (cuDNN's legacy algorithms or its graph API's engines, in either layout;
  // im2col over slices: offered()); else the layers' own im2col +
  // cuBLASLt, which keeps the patch matrix for the backward pass.
  bool has_conv2d(const Window2D& w, int64_t filters) override;
  std::vector<std::string> convolution_ways(const Window2D& w, int64_t filters, ConvolutionDirection d) override;
  void force_convolution_way(const std::string& way) override;
  std::vector<ConvolutionChoice> convolution_choices() const override { return conv_ways_.choices(); }
  int64_t forced_convolution_refusals() const override { return conv_ways_.forced_refusals(); }
  void conv2d(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) override;
  Tensor conv2d_keeping_patches(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) override;
  void conv2d_backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel,
                            float* dx) override;
  void conv2d_backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy,
                              float* dkernel) override;
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
  void adam_update_many(std::span<const AdamTensor> tensors, const AdamParams& p, const float* lr_step,
                        WeightStores stores) override;
  // The side branch is a second stream of this GPU, forked from the main
  // stream by an event and joined back by another (in a capture: parallel
  // branches of the step graph). Made at the first branch outside a
  // capture, with a cuBLASLt workspace of its own. The branch's calls take
  // no cuDNN way (ways_for).
  void allow_branches(bool allowed) override;
  void begin_branch() override;
  void end_branch() noexcept override;
  void join_branch() noexcept override;

private:
  // Makes this GPU the calling thread's current device (a cached check);
  // answers the stream the calling thread's work goes to: the side branch's
  // inside a branch, else the main stream.
  cudaStream_t enter() const;
  bool in_branch() const;
  // enter()'s stream without the device check (deallocate must not throw).
  cudaStream_t current_stream() const;
  // The cuBLASLt workspace for the calling thread's stream: the branch's, or null for the main one's.
  void* gemm_workspace() const;
  // A device buffer of at least `bytes` kept between calls (the channel
  // reductions' partial sums and tickets); grows in stream order.
  // Under scratch_mutex_.
  void* scratch(void*& buffer, size_t& capacity, size_t bytes);
  std::string out_of_memory(size_t bytes) const;
  // After an allocation or a replay's mapping failed outside a capture:
  // waits for the stream and gives back what the pool keeps unused and the
  // memory captured steps hold between replays; true when there was some.
  bool release_cached_memory();
  // Host copies cannot be part of a captured step (a replay would repeat
  // stale data, or none): refused with a message, as on sim.
  void refuse_while_capturing(const char* what);
  // The error a synchronisation reports when queued work failed.
  Error queued_failure(cudaError_t e) const;

  int index_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  void* workspace_ = nullptr;
  std::unique_ptr<cuda::CublasLtGemm> gemm_;
  // cuDNN, made at the first convolution (null when it cannot be: the
  // build has no cudnn.h or the library does not load), in the layers' NHWC
  // layout and in NCHW, through the legacy API and through the graph API
  // (not with STRATA_CUDNN_GRAPH=0).
  void make_cudnn();
  // A layer's kernel in cuDNN's filter layout (a temporary on the stream).
  Tensor cudnn_kernel(const Window2D& w, int64_t filters, const float* kernel, bool nchw);
  // conv2d, the patch matrix handed back where `keep` and im2col over the whole batch ran.
  Tensor convolve(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y, bool keep);
  Tensor to_nchw(const float* x, int64_t n, int64_t pixels, int64_t channels);
  void from_nchw(const Tensor& t, int64_t n, int64_t pixels, int64_t channels, float* x);
  int64_t images_per_slice(const Window2D& w) const;
  struct Offered {
    bool nhwc = false, nchw = false, graph_nhwc = false, graph_nchw = false, slices = false;
  };
  Offered offered(const Window2D& w, int64_t filters, ConvolutionDirection d);
  using CudnnCall = std::function<bool(cuda::CudnnConvolver&)>;
  std::vector<cuda::ConvolutionWays::Way> ways_for(const Window2D& w, int64_t filters, ConvolutionDirection d,
                                                   const CudnnCall& nhwc, const CudnnCall& nchw,
                                                   const std::function<void(int64_t)>& im2col);
  std::once_flag cudnn_once_;
  std::unique_ptr<cuda::CudnnConvolver> cudnn_, cudnn_nchw_, cudnn_graph_, cudnn_graph_nchw_;
  cuda::ConvolutionWays conv_ways_;  // per shape and direction: the fastest way
  int64_t l2_bytes_ = 0;
  std::string cudnn_unavailable_;
  cuda::PinnedStaging staging_;
  float* label_error_ = nullptr;
  std::mutex scratch_mutex_;
  // The per-channel reductions' scratch of one stream (partial sums, and
  // tickets that must stay apart from another stream's): the main stream's
  // here, the side branch's in Branch.
  struct ReduceBuffers {
    void* partials = nullptr;
    size_t partial_bytes = 0;
    void* tickets = nullptr;
    size_t ticket_bytes = 0;
  };
  ReduceBuffers reduce_main_;
  // The calling thread's stream's, grown for (rows, channels); under scratch_mutex_.
  cuda::ReduceScratch reduce_scratch(cudaStream_t s, int64_t rows, int64_t channels);
  // `r` grown to at least `size`, its new tickets zeroed on `s` (the stream
  // that uses them, or one it forks from); under scratch_mutex_.
  void grow_reduce(ReduceBuffers& r, const cuda::ReduceScratchSize& size, cudaStream_t s);
  std::vector<void*> retired_scratch_;  // outgrown scratch buffers (scratch())
  // While a capture is under way: what it allocated (the graph frees those),
  // and older memory freed meanwhile, which a graph cannot free (CUDA
  // rejects a free node for memory no allocation node made): freed after.
  std::mutex capture_mutex_;
  bool capturing_ = false;
  std::set<void*> captured_allocations_;
  std::vector<void*> deferred_frees_;
  // The timing marks' link to the host clock: clock_ref_[i], recorded on an
  // otherwise idle stream and waited for, happened at host time
  // clock_ref_us_[i] (to within half the wait, a few microseconds: the
  // shortest of a few waits counts, since one preempted thread or a GPU
  // time-sliced with another process would shift every mark read against
  // that reference; clock_probe_ is the trial event). Measured
  // again each second, into the other of the two: marks are read against the
  // previous one (one to three seconds old, so before them: one elapsed-time
  // read), so a mark's place on the host clock carries the two clocks' drift
  // over up to three seconds rather than one. Durations (elapsed time between
  // a span's own marks) carry none.
  void calibrate_clock();
  // A reached mark's time on the host's clock (microseconds); under clock_mutex_ inside.
  std::optional<double> host_time_us(cudaEvent_t mark);
  std::mutex clock_mutex_;
  // Timing marks' events, reused: a traced step queues marks outside its
  // graph every step (the batch's copy), and creating and destroying an
  // event costs the host about as much as recording it.
  std::shared_ptr<SpareEvents> spare_marks_ = std::make_shared<SpareEvents>();
  // The same for the events that order streams (record_event: several a
  // step, for the device-memory all-reduce's stages among replicas sharing
  // a GPU, the step's figures, copies between devices).
  std::shared_ptr<SpareEvents> spare_events_ = std::make_shared<SpareEvents>();
  struct Branch {
    cudaStream_t stream = nullptr;
    cudaEvent_t fork = nullptr, join = nullptr;
    void* gemm_workspace = nullptr;
    ReduceBuffers reduce;
    // Begun and not yet joined, by one thread (the one whose thread-local
    // marks say so): another thread's begin_branch meanwhile stays on the
    // main stream, so no thread joins or clears a branch it did not begin.
    std::atomic<bool> busy{false};
  };
  std::atomic<int> branch_allowances_{0};  // allow_branches(true) less allow_branches(false)
  std::mutex branch_mutex_;                // making branch_
  std::unique_ptr<Branch> branch_;         // made by the first begin_branch() outside a capture
  static constexpr unsigned kBranchRetryEvery = 64;
  unsigned branch_refusals_ = 0;  // calls since making branch_ found no room (0: none did); under branch_mutex_
  std::atomic<cudaStream_t> branch_stream_{nullptr};  // branch_->stream once made, for release_cached_memory()
  cudaStream_t clock_stream_ = nullptr;
  cudaEvent_t clock_ref_[2] = {};
  cudaEvent_t clock_probe_ = nullptr;
  double clock_ref_us_[2] = {-1, -1};
  int clock_current_ = 1;  // calibrate_clock() starts at 0
};

}  // namespace strata
