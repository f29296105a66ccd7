#include "backend/sim/SimBackend.h"

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/Error.h"

namespace strata {

SimBackend::SimBackend(int index)
    : index_(index),
      arena_(index, sim_device_memory_bytes()),
      cpu_(1, index),
      stream_("sim:" + std::to_string(index)),
      side_cpu_(1, index),
      side_("sim:" + std::to_string(index) + " side") {
  register_sim_arena(index, &arena_);
  label_error_ = static_cast<float*>(allocate(2 * sizeof(float)));
  fill32(label_error_, 2, 0);
}

SimBackend::~SimBackend() {
  side_.synchronize();
  stream_.synchronize();
  register_sim_arena(index_, nullptr);
}

namespace {
// The sim backend whose side branch the calling thread is in, if any, and
// the one whose branch it ended but has not joined yet.
thread_local const SimBackend* t_sim_branch_of = nullptr;
thread_local const SimBackend* t_sim_unjoined_of = nullptr;
}  // namespace

bool SimBackend::in_branch() const { return t_sim_branch_of == this; }

void SimBackend::run(std::function<void(CpuBackend&)> op) {
  CpuBackend& kernels = in_branch() ? side_cpu_ : cpu_;
  current().enqueue([op = std::move(op), &kernels] { op(kernels); });
}

void SimBackend::begin_branch() {
  // As on CUDA: none while one is open or ended and not joined, on any device.
  if (branch_allowances_ <= 0 || t_sim_branch_of || t_sim_unjoined_of) return;
  if (side_busy_.exchange(true)) return;
  try {
    // Inside a capture the side stream joins it, as a CUDA stream that waits
    // for an event of a capturing one does: the graph then holds both
    // streams' work, forked and joined, and each replay runs the two beside
    // each other again.
    const EventPtr fork = stream_.record();
    std::lock_guard lock(capture_mutex_);
    if (capture_ && !side_.capturing()) side_.begin_capture();
    side_.wait(fork);
    if (capture_) {
      capture_->branch_open = true;
      // Blocks freed before the fork are ordered before the branch's work.
      capture_->before_fork.clear();
      for (const auto& [bytes, p] : capture_->free) capture_->before_fork.insert(p);
    }
  } catch (...) {
    side_busy_ = false;
    throw;
  }
  t_sim_branch_of = this;
  counters().branches++;
}

void SimBackend::end_branch() noexcept {
  if (t_sim_branch_of != this) return;
  t_sim_branch_of = nullptr;
  t_sim_unjoined_of = this;
}

void SimBackend::join_branch() noexcept {
  end_branch();
  if (t_sim_unjoined_of != this) return;
  t_sim_unjoined_of = nullptr;
  struct Release {
    std::atomic<bool>& busy;
    ~Release() { busy = false; }
  } release{side_busy_};  // the branch is free for any thread once joined
  try {
    stream_.wait(side_.record());
  } catch (...) {
    // Out of host memory for an event: the host waits for the side's work
    // instead (inside a capture that throws too, and the capture's end
    // reports the branch unjoined).
    try {
      side_.synchronize();
    } catch (...) {
      // Its failure is rethrown by the next synchronize().
    }
    return;
  }
  std::lock_guard lock(capture_mutex_);
  if (!capture_) return;
  // The branch's frees are ordered before the main stream's work from here.
  capture_->branch_open = false;
  capture_->before_fork.clear();
  capture_->free.merge(capture_->branch_freed);
}

template <typename T>
T* SimBackend::view(T* p, const char* op) const {
  if (!p) return nullptr;
  const int owner = sim_arena_of(p);
  if (owner < 0)
    throw runtime_error(device().str() + ": " + op + " was given a host pointer; device kernels take device memory only");
  if (owner == index_) return static_cast<T*>(arena_.host_view(p));
  // A peer sim device's memory (peer access): its arena translates.
  return static_cast<T*>(registered_sim_arena(owner)->host_view(p));
}

// ---- memory --------------------------------------------------------------------

namespace {
class SimGraph final : public DeviceGraph {
public:
  SimGraph(std::shared_ptr<const SimStream::Recording> ops, std::shared_ptr<const SimStream::Recording> side_ops,
           std::vector<std::pair<void*, size_t>> blocks, SimArena& arena, SimStream& stream)
      : ops(std::move(ops)), side_ops(std::move(side_ops)), blocks_(std::move(blocks)), arena_(arena), stream_(stream) {}
  ~SimGraph() override {
    // Returned in stream order: replays already queued still use the memory
    // (the side stream's part of each ends before the main stream's does).
    stream_.enqueue([blocks = std::move(blocks_), &arena = arena_] {
      for (auto [p, bytes] : blocks) arena.deallocate(p, bytes);
    });
  }
  const std::shared_ptr<const SimStream::Recording> ops;
  const std::shared_ptr<const SimStream::Recording> side_ops;  // null: no branch was forked

private:
  std::vector<std::pair<void*, size_t>> blocks_;
  SimArena& arena_;
  SimStream& stream_;
};
}  // namespace

void SimBackend::begin_capture() {
  {
    std::lock_guard lock(capture_mutex_);
    if (capture_) throw runtime_error(device().str() + ": begin_capture while a capture is already under way");
    capture_.emplace();
  }
  stream_.begin_capture();
}

GraphPtr SimBackend::end_capture() {
  auto ops = std::make_shared<const SimStream::Recording>(stream_.end_capture());
  Capture c;
  std::shared_ptr<const SimStream::Recording> side_ops;
  {
    std::lock_guard lock(capture_mutex_);
    c = std::move(*capture_);
    capture_.reset();
    if (side_.capturing()) side_ops = std::make_shared<const SimStream::Recording>(side_.end_capture());
  }
  auto give_back = [&] {
    for (auto [p, bytes] : c.deferred) arena_.deallocate(p, bytes);
    for (auto [bytes, p] : c.free) arena_.deallocate(p, bytes);
    for (auto [bytes, p] : c.branch_freed) arena_.deallocate(p, bytes);
  };
  if (c.branch_open) {
    // As CUDA's cudaErrorStreamCaptureUnjoined: a replay's main stream would
    // end before the branch's work, and memory it frees could reach others
    // while the branch still uses it.
    give_back();
    throw runtime_error(device().str() + ": a side branch forked during the capture was not joined before its end");
  }
  if (!c.live.empty()) {
    // Memory still in use would be written by every replay behind its
    // owner's back: the captured code must free what it allocates.
    give_back();
    throw runtime_error(device().str() + ": " + std::to_string(c.live.size()) +
                        " allocations made during the capture are still in use at its end");
  }
  // Older memory freed while capturing is still read or written by every
  // replay: it returns to the arena with the graph, not before.
  c.owned.insert(c.owned.end(), c.deferred.begin(), c.deferred.end());
  counters().graph_operations = static_cast<int64_t>(ops->ops.size() + (side_ops ? side_ops->ops.size() : 0));
  return std::make_shared<SimGraph>(std::move(ops), std::move(side_ops), std::move(c.owned), arena_, stream_);
}

void SimBackend::replay(const GraphPtr& graph) {
  auto* g = dynamic_cast<const SimGraph*>(graph.get());
  if (!g) throw runtime_error(device().str() + ": replay given a graph of another device");
  if (!g->side_ops) {
    stream_.replay(g->ops, SimStream::next_replay());
    return;
  }
  // As CudaBackend's: another thread's branch is joined before the replay
  // is queued, and none forks until it is (the side stream's kernels
  // state is one thread's). The number is taken once the side stream is
  // this replay's, so replays are queued in the order of their numbers.
  while (side_busy_.exchange(true)) std::this_thread::yield();
  struct Release {
    std::atomic<bool>& busy;
    ~Release() { busy = false; }
  } release{side_busy_};
  const uint64_t id = SimStream::next_replay();
  stream_.replay(g->ops, id);
  side_.replay(g->side_ops, id);
}

void* SimBackend::allocate(size_t bytes) {
  {
    std::lock_guard lock(capture_mutex_);
    // CUDA's graph memory reuses a block only along the graph's edges: a
    // captured branch takes what was freed before its fork or by itself,
    // never a block the main stream freed after the fork.
    if (capture_) {
      if (void* p = take_freed(bytes)) {
        capture_->live.insert(p);
        poison(p, bytes);
        return p;
      }
    }
  }
  bool fresh = false;
  void* p = arena_.allocate(bytes, &fresh);
  if (!p)
    throw device_memory_exhausted(device().str() + ": out of device memory allocating " + std::to_string(bytes) + " bytes (" +
                                      std::to_string(arena_.in_use()) + " of " + std::to_string(arena_.capacity()) +
                                      " in use)",
                                  device().str());
  if (fresh) {
    counters().allocations++;
    counters().allocated_bytes += static_cast<int64_t>(bytes);
  }
  {
    std::lock_guard lock(capture_mutex_);
    if (capture_) {
      capture_->live.insert(p);
      capture_->owned.emplace_back(p, bytes);
    }
  }
  poison(p, bytes);
  return p;
}

void* SimBackend::take_freed(size_t bytes) {
  Capture& c = *capture_;
  auto take = [](std::multimap<size_t, void*>& blocks, std::multimap<size_t, void*>::iterator it) {
    void* p = it->second;
    blocks.erase(it);
    return p;
  };
  if (!in_branch()) {
    auto it = c.free.find(bytes);
    if (it == c.free.end()) return nullptr;
    c.before_fork.erase(it->second);  // freed again later, it is not from before the fork
    return take(c.free, it);
  }
  // A branch: its own frees, then one from before its fork.
  if (auto own = c.branch_freed.find(bytes); own != c.branch_freed.end()) return take(c.branch_freed, own);
  auto [first, last] = c.free.equal_range(bytes);
  for (auto it = first; it != last; ++it)
    if (c.before_fork.erase(it->second)) return take(c.free, it);
  return nullptr;
}

void SimBackend::poison(void* p, size_t bytes) {
  // CUDA's pools and graph memory hand out blocks with whatever they held:
  // every block starts as NaN (0xff bytes), in stream order (also in each
  // replay of a capture), so a kernel that reads what nobody wrote fails
  // here as it would on a GPU, instead of finding zeros or last step's values.
  char* d = view(static_cast<char*>(p), "allocate");
  run([d, bytes](CpuBackend&) { std::memset(d, 0xff, bytes); });
}

void SimBackend::deallocate(void* p, size_t bytes) {
  {
    std::lock_guard lock(capture_mutex_);
    if (capture_) {
      // Freed inside a branch, a block serves the main stream only after
      // the join orders the branch's work before it.
      if (capture_->live.erase(p)) (in_branch() ? capture_->branch_freed : capture_->free).emplace(bytes, p);
      else capture_->deferred.emplace_back(p, bytes);
      return;
    }
  }
  // Back in the arena once the work queued so far on the stream it is freed
  // in has run, as cudaFreeAsync orders a free (its kernels may still read
  // it): the side stream's in a branch; the main stream's wherever branches
  // may run, for a branch is ordered after the main stream only up to its
  // start, and memory handed to it at once could be written beside kernels
  // another thread queued on the main stream before the free (the data
  // pipeline's gather of a batch reading its row numbers). Without
  // branches every kernel runs on the main stream, after those.
  if (in_branch() || branch_allowances_ > 0) {
    SimStream& stream = current();
    try {
      stream.enqueue([this, p, bytes] { arena_.deallocate(p, bytes); });
      return;
    } catch (...) {
      // Out of host memory for the closure: the stream's work so far ends first.
      try {
        stream.synchronize();
      } catch (...) {
        // Its failure is rethrown by the next synchronize().
      }
    }
  }
  arena_.deallocate(p, bytes);
}

void SimBackend::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  if (stream_.capturing()) throw runtime_error(device().str() + ": a copy from the host cannot be part of a captured step");
  if (sim_arena_of(host_src) >= 0) throw runtime_error(device().str() + ": copy_from_host given device memory as its source");
  float* d = view(static_cast<float*>(dst), "copy_from_host");
  // Staged now, as a copy from pageable memory is: the host may reuse its buffer at once.
  auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(host_src), static_cast<const char*>(host_src) + bytes);
  counters().h2d++;
  counters().h2d_bytes += static_cast<int64_t>(bytes);
  run([d, staged](CpuBackend&) { std::memcpy(d, staged->data(), staged->size()); });
}

void SimBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  if (sim_arena_of(host_dst) >= 0) throw runtime_error(device().str() + ": copy_to_host given device memory as its destination");
  counters().d2h++;
  counters().d2h_bytes += static_cast<int64_t>(bytes);
  stream_.enqueue_to_host(host_dst, view(static_cast<const char*>(src), "copy_to_host"), bytes);
}

void SimBackend::copy(void* dst, const void* src, size_t bytes) {
  char* d = view(static_cast<char*>(dst), "copy");
  const char* s = view(static_cast<const char*>(src), "copy");
  counters().d2d++;
  counters().d2d_bytes += static_cast<int64_t>(bytes);
  run([d, s, bytes](CpuBackend&) { std::memmove(d, s, bytes); });
}

void SimBackend::fill32(void* dst, int64_t n, uint32_t word) {
  auto* d = view(static_cast<uint32_t*>(dst), "fill");
  run([d, n, word](CpuBackend&) { std::fill(d, d + n, word); });
}

void SimBackend::synchronize() {
  counters().syncs++;
  side_.synchronize();  // its failures too (its work is joined into the main stream's)
  stream_.synchronize();
}

void SimBackend::wait_host(const EventPtr& event) {
  counters().syncs++;
  stream_.wait_host(event);
}

// ---- kernels: the CPU's, queued on the device thread -----------------------------

void SimBackend::gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, const float* b,
                      float beta, float* c) {
  auto A = view(a, "gemm"), B = view(b, "gemm");
  auto C = view(c, "gemm");
  run([=](CpuBackend& cpu) { cpu.gemm(ta, tb, m, n, k, alpha, A, B, beta, C); });
}

void SimBackend::add_bias_rows(float* y, const float* bias, int64_t rows, int64_t cols) {
  auto Y = view(y, "add_bias_rows");
  auto B = view(bias, "add_bias_rows");
  run([=](CpuBackend& cpu) { cpu.add_bias_rows(Y, B, rows, cols); });
}

void SimBackend::sum_rows(const float* x, int64_t rows, int64_t cols, float* out, bool accumulate) {
  auto X = view(x, "sum_rows");
  auto O = view(out, "sum_rows");
  run([=](CpuBackend& cpu) { cpu.sum_rows(X, rows, cols, O, accumulate); });
}

void SimBackend::activation_forward(Activation act, const float* x, float* y, int64_t rows, int64_t cols) {
  auto X = view(x, "activation_forward");
  auto Y = view(y, "activation_forward");
  run([=](CpuBackend& cpu) { cpu.activation_forward(act, X, Y, rows, cols); });
}

void SimBackend::activation_backward(Activation act, const float* y, const float* dy, float* dx, int64_t rows,
                                     int64_t cols) {
  auto Y = view(y, "activation_backward"), DY = view(dy, "activation_backward");
  auto DX = view(dx, "activation_backward");
  run([=](CpuBackend& cpu) { cpu.activation_backward(act, Y, DY, DX, rows, cols); });
}

void SimBackend::sparse_softmax_xent(const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                     float* loss, float* dlogits) {
  auto X = view(logits, "sparse_softmax_xent");
  auto L = view(labels, "sparse_softmax_xent");
  auto O = view(loss, "sparse_softmax_xent"), D = view(dlogits, "sparse_softmax_xent");
  run([=](CpuBackend& cpu) { cpu.sparse_softmax_xent(X, L, rows, cols, O, D); });
}

void SimBackend::softmax_xent(const float* logits, const float* targets, int64_t rows, int64_t cols, float* loss,
                              float* dlogits) {
  auto X = view(logits, "softmax_xent"), T = view(targets, "softmax_xent");
  auto O = view(loss, "softmax_xent"), D = view(dlogits, "softmax_xent");
  run([=](CpuBackend& cpu) { cpu.softmax_xent(X, T, rows, cols, O, D); });
}

void SimBackend::axpby(int64_t n, float alpha, const float* x, float beta, float* y) {
  auto X = view(x, "axpby");
  auto Y = view(y, "axpby");
  run([=](CpuBackend& cpu) { cpu.axpby(n, alpha, X, beta, Y); });
}

void SimBackend::dropout(int64_t n, float rate, uint64_t seed, uint64_t stream, const int32_t* call, uint64_t counter,
                         const float* x, float* y, float* mask) {
  auto X = view(x, "dropout");
  auto C = view(call, "dropout");
  auto Y = view(y, "dropout"), M = view(mask, "dropout");
  run([=](CpuBackend& cpu) { cpu.dropout(n, rate, seed, stream, C, counter, X, Y, M); });
}

void SimBackend::mul(int64_t n, const float* a, const float* b, float* y) {
  auto A = view(a, "mul"), B = view(b, "mul");
  auto Y = view(y, "mul");
  run([=](CpuBackend& cpu) { cpu.mul(n, A, B, Y); });
}

void SimBackend::scale_rows(const float* x, const float* scale, int64_t rows, int64_t cols, float* y) {
  auto X = view(x, "scale_rows"), S = view(scale, "scale_rows");
  auto Y = view(y, "scale_rows");
  run([=](CpuBackend& cpu) { cpu.scale_rows(X, S, rows, cols, Y); });
}

void SimBackend::log_clamp(int64_t n, const float* x, float eps, float* y) {
  auto X = view(x, "log_clamp");
  auto Y = view(y, "log_clamp");
  run([=](CpuBackend& cpu) { cpu.log_clamp(n, X, eps, Y); });
}

void SimBackend::log_clamp_backward(int64_t n, const float* x, float eps, const float* dy, float* dx) {
  auto X = view(x, "log_clamp_backward"), DY = view(dy, "log_clamp_backward");
  auto DX = view(dx, "log_clamp_backward");
  run([=](CpuBackend& cpu) { cpu.log_clamp_backward(n, X, eps, DY, DX); });
}

void SimBackend::pixels_to_float(int64_t rows, int64_t features, const uint8_t* in, float scale, const float* mean,
                                 const float* inv_std, float* out) {
  auto I = view(in, "pixels_to_float");
  auto M = view(mean, "pixels_to_float"), S = view(inv_std, "pixels_to_float");
  auto O = view(out, "pixels_to_float");
  run([=](CpuBackend& cpu) { cpu.pixels_to_float(rows, features, I, scale, M, S, O); });
}

void SimBackend::gather_rows(const uint8_t* table, int64_t row_bytes, const int32_t* rows, int64_t n, uint8_t* out) {
  auto T = view(table, "gather_rows");
  auto O = view(out, "gather_rows");
  auto R = view(rows, "gather_rows");
  run([=](CpuBackend& cpu) { cpu.gather_rows(T, row_bytes, R, n, O); });
}

void SimBackend::scaled_sum(int64_t n, const float* x, const float* scale, float* out) {
  auto X = view(x, "scaled_sum"), S = view(scale, "scaled_sum");
  auto O = view(out, "scaled_sum");
  run([=](CpuBackend& cpu) { cpu.scaled_sum(n, X, S, O); });
}

void SimBackend::broadcast_scaled(int64_t n, const float* g, const float* scale, float* y) {
  auto G = view(g, "broadcast_scaled"), S = view(scale, "broadcast_scaled");
  auto Y = view(y, "broadcast_scaled");
  run([=](CpuBackend& cpu) { cpu.broadcast_scaled(n, G, S, Y); });
}

void SimBackend::add_scalar(int64_t n, float value, float* x) {
  auto X = view(x, "add_scalar");
  run([=](CpuBackend& cpu) { cpu.add_scalar(n, value, X); });
}

void SimBackend::increment(int64_t n, int32_t* x) {
  auto X = view(x, "increment");
  run([=](CpuBackend& cpu) { cpu.increment(n, X); });
}

void SimBackend::argmax_rows(const float* x, int64_t rows, int64_t cols, int32_t* out) {
  auto X = view(x, "argmax_rows");
  auto O = view(out, "argmax_rows");
  run([=](CpuBackend& cpu) { cpu.argmax_rows(X, rows, cols, O); });
}

void SimBackend::count_correct(const float* predictions, const int32_t* labels, int64_t rows, int64_t cols,
                               float* count) {
  auto P = view(predictions, "count_correct");
  auto L = view(labels, "count_correct");
  auto C = view(count, "count_correct");
  run([=](CpuBackend& cpu) { cpu.count_correct(P, L, rows, cols, C); });
}

void SimBackend::check_labels(const int32_t* labels, int64_t n, int64_t classes, float* error) {
  auto L = view(labels, "check_labels");
  auto E = view(error, "check_labels");
  run([=](CpuBackend& cpu) { cpu.check_labels(L, n, classes, E); });
}

std::optional<DeviceMemory::MarkedSpan> SimBackend::span_time_us(const EventPtr& begin, const EventPtr& end) {
  const std::optional<double> t1 = SimStream::mark_time_us(end);
  const std::optional<double> t0 = t1 ? SimStream::mark_time_us(begin) : std::nullopt;
  if (!t0) return std::nullopt;
  return MarkedSpan{*t0, *t1 > *t0 ? *t1 - *t0 : 0.0};
}

std::vector<std::string> SimBackend::convolution_ways(const Window2D& w, int64_t, ConvolutionDirection) {
  if (w.batch > kSliceImages) return {"im2col-slices", "im2col"};
  return {"im2col"};
}

void SimBackend::conv2d(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) {
  conv2d_im2col(w, filters, x, kernel, y, slice_images(w));
}

// As CUDA's im2col way over the whole batch; sliced, nothing is kept.
Tensor SimBackend::conv2d_keeping_patches(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) {
  if (slice_images(w) < w.batch) return Backend::conv2d_keeping_patches(w, filters, x, kernel, y);
  return conv2d_im2col_kept(w, filters, x, kernel, y);
}

void SimBackend::conv2d_backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx) {
  conv2d_backward_data_im2col(w, filters, dy, kernel, dx, slice_images(w));
}

void SimBackend::conv2d_backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy, float* dkernel) {
  conv2d_backward_filter_im2col(w, filters, x, dy, dkernel, slice_images(w));
}

void SimBackend::im2col(const Window2D& w, const float* x, float* col) {
  auto X = view(x, "im2col");
  auto C = view(col, "im2col");
  run([=](CpuBackend& cpu) { cpu.im2col(w, X, C); });
}

void SimBackend::col2im(const Window2D& w, const float* col, float* dx) {
  auto C = view(col, "col2im");
  auto D = view(dx, "col2im");
  run([=](CpuBackend& cpu) { cpu.col2im(w, C, D); });
}

void SimBackend::max_pool(const Window2D& w, const float* x, const float* bias, Activation act, float* y, int32_t* argmax) {
  require_pool_activation(act);
  auto X = view(x, "max_pool");
  auto B = view(bias, "max_pool");
  auto Y = view(y, "max_pool");
  auto A = view(argmax, "max_pool");
  run([=](CpuBackend& cpu) { cpu.max_pool(w, X, B, act, Y, A); });
}

void SimBackend::max_pool_backward(const Window2D& w, const float* dy, const int32_t* argmax, float* dx) {
  auto DY = view(dy, "max_pool_backward");
  auto A = view(argmax, "max_pool_backward");
  auto DX = view(dx, "max_pool_backward");
  run([=](CpuBackend& cpu) { cpu.max_pool_backward(w, DY, A, DX); });
}

void SimBackend::avg_pool(const Window2D& w, const float* x, float* y) {
  auto X = view(x, "avg_pool");
  auto Y = view(y, "avg_pool");
  run([=](CpuBackend& cpu) { cpu.avg_pool(w, X, Y); });
}

void SimBackend::avg_pool_backward(const Window2D& w, const float* dy, float* dx) {
  auto DY = view(dy, "avg_pool_backward");
  auto DX = view(dx, "avg_pool_backward");
  run([=](CpuBackend& cpu) { cpu.avg_pool_backward(w, DY, DX); });
}

void SimBackend::channel_sums(const float* x, int64_t rows, int64_t channels, float* sum, float* sumsq) {
  auto X = view(x, "channel_sums");
  auto S = view(sum, "channel_sums"), Q = view(sumsq, "channel_sums");
  run([=](CpuBackend& cpu) { cpu.channel_sums(X, rows, channels, S, Q); });
}

void SimBackend::batch_norm_stats(const float* sums, int64_t channels, float epsilon, float* mean, float* inv_std) {
  auto S = view(sums, "batch_norm_stats");
  auto M = view(mean, "batch_norm_stats"), I = view(inv_std, "batch_norm_stats");
  run([=](CpuBackend& cpu) { cpu.batch_norm_stats(S, channels, epsilon, M, I); });
}

void SimBackend::batch_norm_inference_stats(const float* moving_mean, const float* moving_var, int64_t channels,
                                            float epsilon, float* mean, float* inv_std) {
  auto MM = view(moving_mean, "batch_norm_inference_stats"), MV = view(moving_var, "batch_norm_inference_stats");
  auto M = view(mean, "batch_norm_inference_stats"), I = view(inv_std, "batch_norm_inference_stats");
  run([=](CpuBackend& cpu) { cpu.batch_norm_inference_stats(MM, MV, channels, epsilon, M, I); });
}

void SimBackend::batch_norm_moving_update(const float* mean, const float* inv_std, const float* count, int64_t channels,
                                          float epsilon, float momentum, float* moving_mean, float* moving_var) {
  auto M = view(mean, "batch_norm_moving_update"), I = view(inv_std, "batch_norm_moving_update");
  auto C = view(count, "batch_norm_moving_update");
  auto MM = view(moving_mean, "batch_norm_moving_update"), MV = view(moving_var, "batch_norm_moving_update");
  run([=](CpuBackend& cpu) { cpu.batch_norm_moving_update(M, I, C, channels, epsilon, momentum, MM, MV); });
}

void SimBackend::batch_norm_apply(const float* x, int64_t rows, int64_t channels, const float* mean,
                                  const float* inv_std, const float* gamma, const float* beta, float* y) {
  auto X = view(x, "batch_norm_apply"), M = view(mean, "batch_norm_apply"), I = view(inv_std, "batch_norm_apply");
  auto G = view(gamma, "batch_norm_apply"), B = view(beta, "batch_norm_apply");
  auto Y = view(y, "batch_norm_apply");
  run([=](CpuBackend& cpu) { cpu.batch_norm_apply(X, rows, channels, M, I, G, B, Y); });
}

void SimBackend::batch_norm_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels,
                                            const float* mean, const float* inv_std, float* sum_dy,
                                            float* sum_dy_xhat) {
  auto DY = view(dy, "batch_norm_backward_reduce"), X = view(x, "batch_norm_backward_reduce");
  auto M = view(mean, "batch_norm_backward_reduce"), I = view(inv_std, "batch_norm_backward_reduce");
  auto S = view(sum_dy, "batch_norm_backward_reduce"), SX = view(sum_dy_xhat, "batch_norm_backward_reduce");
  run([=](CpuBackend& cpu) { cpu.batch_norm_backward_reduce(DY, X, rows, channels, M, I, S, SX); });
}

void SimBackend::batch_norm_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels,
                                           const float* mean, const float* inv_std, const float* gamma,
                                           const float* sum_dy, const float* sum_dy_xhat, const float* count,
                                           float* dx) {
  auto DY = view(dy, "batch_norm_backward_apply"), X = view(x, "batch_norm_backward_apply");
  auto M = view(mean, "batch_norm_backward_apply"), I = view(inv_std, "batch_norm_backward_apply");
  auto G = view(gamma, "batch_norm_backward_apply"), S = view(sum_dy, "batch_norm_backward_apply");
  auto SX = view(sum_dy_xhat, "batch_norm_backward_apply"), C = view(count, "batch_norm_backward_apply");
  auto DX = view(dx, "batch_norm_backward_apply");
  run([=](CpuBackend& cpu) { cpu.batch_norm_backward_apply(DY, X, rows, channels, M, I, G, S, SX, C, DX); });
}

void SimBackend::batch_norm_relu_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels,
                                                 const float* mean, const float* inv_std, const float* gamma,
                                                 const float* beta, float* sum_dz, float* sum_dz_xhat) {
  const char* op = "batch_norm_relu_backward_reduce";
  auto DY = view(dy, op), X = view(x, op), M = view(mean, op), I = view(inv_std, op);
  auto G = view(gamma, op), B = view(beta, op);
  auto S = view(sum_dz, op), SX = view(sum_dz_xhat, op);
  run([=](CpuBackend& cpu) { cpu.batch_norm_relu_backward_reduce(DY, X, rows, channels, M, I, G, B, S, SX); });
}

void SimBackend::batch_norm_relu_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels,
                                                const float* mean, const float* inv_std, const float* gamma,
                                                const float* beta, const float* sum_dz, const float* sum_dz_xhat,
                                                const float* count, float* dx) {
  const char* op = "batch_norm_relu_backward_apply";
  auto DY = view(dy, op), X = view(x, op), M = view(mean, op), I = view(inv_std, op);
  auto G = view(gamma, op), B = view(beta, op), S = view(sum_dz, op), SX = view(sum_dz_xhat, op), C = view(count, op);
  auto DX = view(dx, op);
  run([=](CpuBackend& cpu) { cpu.batch_norm_relu_backward_apply(DY, X, rows, channels, M, I, G, B, S, SX, C, DX); });
}

void SimBackend::sgd_update(int64_t n, float* w, const float* g, float* velocity, const float* lr, float momentum,
                            bool nesterov, WeightStores stores) {
  auto W = view(w, "sgd_update"), V = view(velocity, "sgd_update");
  auto G = view(g, "sgd_update"), LR = view(lr, "sgd_update");
  run([=](CpuBackend& cpu) { cpu.sgd_update(n, W, G, V, LR, momentum, nesterov, stores); });
}

void SimBackend::adam_update(int64_t n, float* w, const float* g, float* m, float* v, const AdamParams& p,
                             const float* lr_step, WeightStores stores) {
  auto W = view(w, "adam_update"), M = view(m, "adam_update"), V = view(v, "adam_update");
  auto G = view(g, "adam_update"), LS = view(lr_step, "adam_update");
  run([=](CpuBackend& cpu) { cpu.adam_update(n, W, G, M, V, p, LS, stores); });
}

}  // namespace strata
