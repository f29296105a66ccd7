#include "backend/cuda/CudaBackend.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "backend/cuda/CudaCheck.h"
#include "backend/cuda/CudaDevices.h"
#include "backend/cuda/CudaKernels.h"
#include "backend/cuda/CudnnConvolver.h"  // no cudnn.h needed: the pointers stay null in a build without it
#include "core/Clock.h"
#include "core/Error.h"
#include "core/Tensor.h"
#ifdef STRATA_WITH_CUDNN
#include "backend/cuda/CudnnConvolution.h"
#include "backend/cuda/CudnnGraphConvolution.h"
#include "backend/cuda/CudnnLibrary.h"
#endif

namespace strata {

namespace {
// cuBLASLt's workspace: enough for its split-K and stream-K kernels.
constexpr size_t kGemmWorkspaceBytes = size_t{32} << 20;

thread_local int t_current_device = -1;
// The backend whose side branch the calling thread is in (begin_branch), if
// any, and the one whose branch it ended but has not joined yet.
thread_local const CudaBackend* t_branch_of = nullptr;
thread_local const CudaBackend* t_unjoined_of = nullptr;

class CudaEvent final : public DeviceEvent {
public:
  explicit CudaEvent(cudaEvent_t e, std::shared_ptr<CudaBackend::SpareEvents> spare = nullptr)
      : event(e), spare_(std::move(spare)) {}
  ~CudaEvent() override {
    if (!spare_) {
      cudaEventDestroy(event);
      return;
    }
    std::lock_guard lock(spare_->mutex);
    spare_->events.push_back(event);
  }
  cudaEvent_t event;

private:
  std::shared_ptr<CudaBackend::SpareEvents> spare_;  // where the event goes back to, when it is reused
};

// An event from `spare` (or a new one, created with `flags`), going back
// there when the last EventPtr to it goes. A stream's wait queued on its
// record meanwhile keeps waiting for that record, so the event can be
// recorded again afterwards for someone else.
std::shared_ptr<CudaEvent> spare_event(const std::shared_ptr<CudaBackend::SpareEvents>& spare, unsigned flags) {
  cudaEvent_t e = nullptr;
  {
    std::lock_guard lock(spare->mutex);
    if (!spare->events.empty()) {
      e = spare->events.back();
      spare->events.pop_back();
    }
  }
  if (!e) STRATA_CUDA(cudaEventCreateWithFlags(&e, flags));
  return std::make_shared<CudaEvent>(e, spare);
}

// The CUDA event behind `event`; an event of another kind of device is an
// error naming the call (`device` and `call` say where).
cudaEvent_t cuda_event_of(const EventPtr& event, const std::string& device, const char* call) {
  auto* e = dynamic_cast<const CudaEvent*>(event.get());
  if (!e) throw runtime_error(device + ": " + call + " given an event of another kind of device");
  return e->event;
}

class CudaGraph final : public DeviceGraph {
public:
  // `held`: buffers released while the step was captured; the graph still
  // reads or writes them, so they return to the pool only with the graph.
  CudaGraph(cudaGraph_t graph, cudaGraphExec_t exec, DeviceMemory& owner, int device, std::vector<void*> held)
      : graph(graph), exec(exec), owner_(owner), device_(device), held_(std::move(held)) {}
  ~CudaGraph() override {
    // On its own GPU: a thread that chose none (the dashboard's reaper)
    // would otherwise open a context on device 0 for it.
    if (CudaBackend::thread_device() != device_ && CudaBackend::set_thread_device(device_) != cudaSuccess) cudaGetLastError();
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    for (void* p : held_) owner_.deallocate(p, 0);
  }
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  bool owned_by(const DeviceMemory* m) const { return &owner_ == m; }

private:
  DeviceMemory& owner_;
  int device_;
  std::vector<void*> held_;
};

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1u << 19)) >> 20) + " MiB"; }

// Every CudaBackend made so far (they live until the process exits).
std::mutex g_opened_mutex;
std::vector<const CudaBackend*> g_opened;

// Lets GPU `peer` read and write the memory of GPU `owner` where the
// hardware can. Memory from a stream-ordered pool ignores peer access
// (cudaDeviceEnablePeerAccess): the pool itself must grant it. A pair whose
// grant fails is recorded (deny_peer_access), so the collectives that read
// across it are not chosen for it; the thread's current device changes.
void share_memory(int owner, cudaMemPool_t pool, int peer) {
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, peer, owner) != cudaSuccess || !can) {
    cudaGetLastError();
    return;
  }
  bool granted = cudaSetDevice(peer) == cudaSuccess;
  if (granted) {
    const cudaError_t e = cudaDeviceEnablePeerAccess(owner, 0);
    granted = e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled;
  }
  if (granted) {
    cudaMemAccessDesc access{};
    access.location.type = cudaMemLocationTypeDevice;
    access.location.id = peer;
    access.flags = cudaMemAccessFlagsProtReadWrite;
    granted = cudaMemPoolSetAccess(pool, &access, 1) == cudaSuccess;
  }
  cudaGetLastError();  // also "already enabled", which is fine but would be blamed on the next launch
  if (!granted) cuda::deny_peer_access(peer, owner);
}
}  // namespace

CudaBackend::CudaBackend(int index) : index_(index) {
  enter();
  cudaDeviceProp prop{};
  STRATA_CUDA(cudaGetDeviceProperties(&prop, index_));
  name_ = prop.name;
  l2_bytes_ = prop.l2CacheSize;
  conv_ways_.keep_in_file(name_, cuda::tf32_requested());
  // On a GPU the build has no code for, every launch fails with "no kernel
  // image"; say so once, with what to rebuild for, before anything launches.
  if (const cudaError_t image = cuda::kernel_image_status(); image != cudaSuccess) {
    cudaGetLastError();
    throw bad_input(device().str() + " (" + name_ + ", compute capability " + std::to_string(prop.major) + "." +
                    std::to_string(prop.minor) + "): this build has no CUDA kernels it can run (" +
                    cudaGetErrorString(image) + "; built for " + STRATA_CUDA_ARCHITECTURES +
                    "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(prop.major * 10 + prop.minor));
  }
  STRATA_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  try {
    // The device's own pool, told to keep what it has: freed blocks return to
    // the pool in stream order and are handed out again without the driver.
    STRATA_CUDA(cudaDeviceGetDefaultMemPool(&pool_, index_));
    uint64_t keep = std::numeric_limits<uint64_t>::max();
    STRATA_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));
    // The GPUs this process uses reach each other's memory directly (mirrored
    // replicas on several GPUs): each new one with those opened before it, so
    // no GPU the run does not name gets a context (and its memory) for this.
    {
      std::lock_guard lock(g_opened_mutex);
      for (const CudaBackend* other : g_opened) {
        share_memory(index_, pool_, other->index_);
        share_memory(other->index_, other->pool_, index_);
      }
    }
    STRATA_CUDA(cudaSetDevice(index_));  // share_memory changed it
    t_current_device = index_;
    workspace_ = allocate(kGemmWorkspaceBytes);
    gemm_ = std::make_unique<cuda::CublasLtGemm>(device().str(), workspace_, kGemmWorkspaceBytes);
    label_error_ = static_cast<float*>(allocate(2 * sizeof(float)));
    fill32(label_error_, 2, 0);
  } catch (...) {
    // A constructor that throws runs no destructor, and the next
    // backend_for() of this GPU tries again: what was made goes back here.
    if (label_error_) cudaFreeAsync(label_error_, stream_);
    if (workspace_) cudaFreeAsync(workspace_, stream_);
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
    cudaGetLastError();
    throw;
  }
  // Listed last: a constructor that throws above (cuBLASLt missing, no
  // memory) runs no destructor, and a listed dead backend would be shared
  // with by the next GPU opened.
  std::lock_guard lock(g_opened_mutex);
  g_opened.push_back(this);
}

CudaBackend::~CudaBackend() {
  // Backends live until the process exits; by then the runtime may be gone,
  // so nothing here may throw.
  {
    std::lock_guard lock(g_opened_mutex);
    std::erase(g_opened, this);
  }
  gemm_.reset();
  if (branch_) {
    if (branch_->gemm_workspace) cudaFreeAsync(branch_->gemm_workspace, stream_);
    cudaEventDestroy(branch_->fork);
    cudaEventDestroy(branch_->join);
    cudaStreamDestroy(branch_->stream);
  }
  cudnn_.reset();
  cudnn_nchw_.reset();
  cudnn_graph_.reset();
  cudnn_graph_nchw_.reset();
  for (cudaEvent_t ref : clock_ref_)
    if (ref) cudaEventDestroy(ref);
  if (clock_probe_) cudaEventDestroy(clock_probe_);
  if (clock_stream_) cudaStreamDestroy(clock_stream_);
  if (stream_) cudaStreamDestroy(stream_);
}

int CudaBackend::thread_device() { return t_current_device; }

cudaError_t CudaBackend::set_thread_device(int index) {
  const cudaError_t e = cudaSetDevice(index);
  t_current_device = e == cudaSuccess ? index : -1;
  return e;
}

cudaStream_t CudaBackend::enter() const {
  if (t_current_device != index_) {
    STRATA_CUDA(cudaSetDevice(index_));
    t_current_device = index_;
  }
  return current_stream();
}

// Only the thread in the branch reads branch_ here: the one that made it.
bool CudaBackend::in_branch() const { return t_branch_of == this; }
cudaStream_t CudaBackend::current_stream() const { return in_branch() ? branch_->stream : stream_; }
void* CudaBackend::gemm_workspace() const { return in_branch() ? branch_->gemm_workspace : nullptr; }

void CudaBackend::allow_branches(bool allowed) { branch_allowances_ += allowed ? 1 : -1; }

void CudaBackend::begin_branch() {
  // Not here, or in a branch already (one level deep), or one ended and not
  // joined (on any device: the thread remembers one to join).
  if (branch_allowances_ <= 0 || t_branch_of || t_unjoined_of) return;
  cudaStream_t main = enter();
  std::lock_guard lock(branch_mutex_);
  if (!branch_) {
    // Its workspace allocated inside a capture would be the graph's memory:
    // the first (op-by-op) step makes it, and until then the work stays on
    // the main stream.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    STRATA_CUDA(cudaStreamIsCapturing(main, &capture));
    if (capture != cudaStreamCaptureStatusNone) return;
    // After a try without room, the next ones wait kBranchRetryEvery calls:
    // each failed try synchronises the device and trims its pools.
    if (branch_refusals_ > 0 && branch_refusals_++ % kBranchRetryEvery != 0) return;
    auto b = std::make_unique<Branch>();
    try {
      STRATA_CUDA(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
      STRATA_CUDA(cudaEventCreateWithFlags(&b->fork, cudaEventDisableTiming));
      STRATA_CUDA(cudaEventCreateWithFlags(&b->join, cudaEventDisableTiming));
      b->gemm_workspace = allocate(kGemmWorkspaceBytes);  // on the main stream: the branch forks after it
      // Its reductions' buffers as large as the main stream's: made late in
      // a step (room found only after the first layers' backward passes),
      // the branch would otherwise be sized by the later layers alone, and
      // a captured step, where every layer branches, cannot grow them.
      std::lock_guard scratch(scratch_mutex_);
      grow_reduce(b->reduce, cuda::ReduceScratchSize{reduce_main_.partial_bytes, reduce_main_.ticket_bytes}, main);
    } catch (const std::exception& e) {
      if (b->reduce.tickets) deallocate(b->reduce.tickets, b->reduce.ticket_bytes);
      if (b->reduce.partials) deallocate(b->reduce.partials, b->reduce.partial_bytes);
      if (b->gemm_workspace) deallocate(b->gemm_workspace, kGemmWorkspaceBytes);
      if (b->join) cudaEventDestroy(b->join);
      if (b->fork) cudaEventDestroy(b->fork);
      if (b->stream) cudaStreamDestroy(b->stream);
      // A branch only overlaps work: without memory for its workspace the
      // work stays on the main stream (a later step may find room).
      if (is_device_memory_exhausted(e)) {
        branch_refusals_ = 1;
        return;
      }
      throw;
    }
    branch_ = std::move(b);
    branch_stream_ = branch_->stream;
  }
  // Another thread's branch (replicas sharing the device, two runs at once):
  // this one's work stays on the main stream.
  if (branch_->busy.exchange(true)) return;
  try {
    STRATA_CUDA(cudaEventRecord(branch_->fork, main));
    STRATA_CUDA(cudaStreamWaitEvent(branch_->stream, branch_->fork, 0));
  } catch (...) {
    branch_->busy = false;
    throw;
  }
  t_branch_of = this;
  counters().branches++;
}

void CudaBackend::end_branch() noexcept {
  if (t_branch_of != this) return;
  t_branch_of = nullptr;
  t_unjoined_of = this;
}

void CudaBackend::join_branch() noexcept {
  if (t_branch_of == this) end_branch();
  if (t_unjoined_of != this) return;
  t_unjoined_of = nullptr;
  // Cannot throw (it runs as a scope is left): a failure here is the GPU's
  // (a sticky error), which the next checked call reports.
  if (cudaEventRecord(branch_->join, branch_->stream) == cudaSuccess) cudaStreamWaitEvent(stream_, branch_->join, 0);
  branch_->busy = false;
}

// ---- memory --------------------------------------------------------------------

std::string CudaBackend::out_of_memory(size_t bytes) const {
  size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  uint64_t held = 0, graphs = 0;
  cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &held);
  // The captured steps' memory is held apart from the pool.
  if (cudaDeviceGetGraphMemAttribute(index_, cudaGraphMemAttrReservedMemCurrent, &graphs) == cudaSuccess) held += graphs;
  cudaGetLastError();
  const std::string what = bytes > 0 ? "allocating " + mib(bytes) : "for a captured step's buffers";
  return device().str() + " (" + name_ + "): out of device memory " + what + " (" + mib(free) + " free of " + mib(total) +
         "; this process holds " + mib(held) + ")";
}

void* CudaBackend::allocate(size_t bytes) {
  cudaStream_t s = enter();
  uint64_t before = 0, after = 0;
  cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &before);
  void* p = nullptr;
  cudaError_t e = cudaMallocAsync(&p, bytes == 0 ? 4 : bytes, s);
  if (e == cudaErrorMemoryAllocation && release_cached_memory()) e = cudaMallocAsync(&p, bytes == 0 ? 4 : bytes, s);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it so the next call does not report it
    throw device_memory_exhausted(out_of_memory(bytes), device().str());
  }
  if (e != cudaSuccess) cuda::throw_cuda(e, "cudaMallocAsync", __FILE__, __LINE__);
  cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &after);
  if (after > before) {
    counters().allocations++;
    counters().allocated_bytes += static_cast<int64_t>(bytes);
  }
  std::lock_guard lock(capture_mutex_);
  if (capturing_) captured_allocations_.insert(p);
  return p;
}

bool CudaBackend::release_cached_memory() {
  cudaGetLastError();  // the failed call's error is not sticky
  {
    // Inside a capture the graph being recorded is what allocates.
    std::lock_guard lock(capture_mutex_);
    if (capturing_) return false;
  }
  // Two caches hold memory nobody uses at the moment: the pool keeps what
  // op-by-op steps freed, and CUDA keeps a captured step's buffers (the
  // device's graph memory, apart from the pool) after each replay, even
  // after the graph is gone, until they are trimmed. Op-by-op steps beside
  // a captured one (an epoch's partial last batch, evaluation) and its
  // replays would otherwise need both at once. Trimming waits for the work
  // queued so far; the next replay maps its memory again.
  uint64_t graphs = 0, pooled = 0;
  // Not branch_ itself: another thread may be making it (under
  // branch_mutex_, which this, reached from its allocation, cannot take).
  const cudaStream_t side = branch_stream_.load();
  if (cudaDeviceGetGraphMemAttribute(index_, cudaGraphMemAttrReservedMemCurrent, &graphs) != cudaSuccess ||
      cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &pooled) != cudaSuccess || graphs + pooled == 0 ||
      cudaStreamSynchronize(stream_) != cudaSuccess ||
      (side && cudaStreamSynchronize(side) != cudaSuccess) ||  // the side stream's frees too
      cudaDeviceGraphMemTrim(index_) != cudaSuccess || cudaMemPoolTrimTo(pool_, 0) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return true;
}

void CudaBackend::deallocate(void* p, size_t) {
  // Called from destructors, also at exit: never throws.
  if (!p) return;
  {
    std::lock_guard lock(capture_mutex_);
    if (capturing_ && !captured_allocations_.erase(p)) {
      deferred_frees_.push_back(p);
      return;
    }
  }
  if (cudaSetDevice(index_) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  t_current_device = index_;
  // A failure must not stay the thread's last error, blamed on the next launch.
  // In the order of the stream this thread's work goes to: memory a side
  // branch used is freed after its use there.
  if (cudaFreeAsync(p, current_stream()) != cudaSuccess) cudaGetLastError();
}

void CudaBackend::refuse_while_capturing(const char* what) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  // The query also returns the failure of a kernel queued earlier (an
  // illegal address): that is the failure to report, as a synchronisation
  // would, not this query's.
  if (const cudaError_t e = cudaStreamIsCapturing(enter(), &status); e != cudaSuccess) throw queued_failure(e);
  if (status != cudaStreamCaptureStatusNone)
    throw runtime_error(device().str() + ": " + what + " cannot be part of a captured step");
}

void CudaBackend::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  refuse_while_capturing("a copy from the host");
  counters().h2d++;
  counters().h2d_bytes += static_cast<int64_t>(bytes);
  staging_.copy_to_device(dst, host_src, bytes, enter());
}

void CudaBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  refuse_while_capturing("a copy to the host");
  counters().d2h++;
  counters().d2h_bytes += static_cast<int64_t>(bytes);
  STRATA_CUDA(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, enter()));
}

void CudaBackend::pin_host_memory(void* p, size_t bytes) {
  enter();
  // Portable: every GPU's copies see it as pinned (workers on several GPUs).
  STRATA_CUDA(cudaHostRegister(p, bytes, cudaHostRegisterPortable));
}

void CudaBackend::unpin_host_memory(void* p) {
  enter();
  if (cudaHostUnregister(p) != cudaSuccess) cudaGetLastError();  // not registered: nothing to undo
}

void CudaBackend::copy(void* dst, const void* src, size_t bytes) {
  if (dst == src || bytes == 0) return;
  counters().d2d++;
  counters().d2d_bytes += static_cast<int64_t>(bytes);
  // Unified addressing tells the runtime which device each side is on (peer copies included).
  STRATA_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, enter()));
}

void CudaBackend::fill32(void* dst, int64_t n, uint32_t word) {
  cuda::fill32(enter(), static_cast<uint32_t*>(dst), n, word);
}

void CudaBackend::synchronize() {
  // Waiting would end the capture with an error blamed on queued work.
  refuse_while_capturing("a synchronisation");
  counters().syncs++;
  const cudaError_t e = cudaStreamSynchronize(enter());
  if (e != cudaSuccess) throw queued_failure(e);
}

Error CudaBackend::queued_failure(cudaError_t e) const {
  // Not sticky errors stay the thread's last one: cleared here, or the next
  // kernel launch's check would report this failure under its own name.
  cudaGetLastError();
  if (e == cudaErrorCapturedEvent)
    return runtime_error(device().str() + ": the host waited for an event recorded while a step was captured");
  return runtime_error(device().str() + " (" + name_ + "): a queued operation failed: " + cudaGetErrorString(e) + " (" +
                       cudaGetErrorName(e) + "). Run with CUDA_LAUNCH_BLOCKING=1 to stop at the failing kernel");
}

EventPtr CudaBackend::record_event() {
  cudaStream_t s = enter();
  auto event = spare_event(spare_events_, cudaEventDisableTiming);
  STRATA_CUDA(cudaEventRecord(event->event, s));
  return event;
}

EventPtr CudaBackend::record_timing_mark() { return record_timing_mark_on(enter()); }

CudaBackend::SpareEvents::~SpareEvents() {
  for (cudaEvent_t e : events) cudaEventDestroy(e);
}

EventPtr CudaBackend::record_timing_mark_on(cudaStream_t stream) {
  enter();
  auto mark = spare_event(spare_marks_, cudaEventDefault);  // with timing
  const cudaEvent_t e = mark->event;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  STRATA_CUDA(cudaStreamIsCapturing(stream, &capture));
  // Captured without the flag, a record only orders streams inside the
  // graph; as an external node it is a real record at every replay.
  STRATA_CUDA(cudaEventRecordWithFlags(
      e, stream, capture == cudaStreamCaptureStatusActive ? cudaEventRecordExternal : cudaEventRecordDefault));
  return mark;
}

// A span costs two or three elapsed-time reads (its duration between its
// own marks, then its start on the host clock) and no query: the duration
// is refused (cudaErrorNotReady) until the device has passed both marks.
// With a span or more per phase of every step, these calls are most of what
// tracing adds to the host's side of a short step.
std::optional<DeviceMemory::MarkedSpan> CudaBackend::span_time_us(const EventPtr& begin, const EventPtr& end) {
  auto* b = dynamic_cast<const CudaEvent*>(begin.get());
  auto* e = dynamic_cast<const CudaEvent*>(end.get());
  if (!b || !e) return std::nullopt;
  enter();
  float ms = 0;
  if (cudaEventElapsedTime(&ms, b->event, e->event) != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  const std::optional<double> start = host_time_us(b->event);
  if (!start) return std::nullopt;
  return MarkedSpan{*start, std::max(0.0, 1000.0 * static_cast<double>(ms))};
}

std::optional<double> CudaBackend::host_time_us(cudaEvent_t mark) {
  std::lock_guard lock(clock_mutex_);
  const double now_us = monotonic_seconds() * 1e6;
  if (clock_ref_us_[clock_current_] < 0 || now_us - clock_ref_us_[clock_current_] > 1e6) calibrate_clock();
  // The previous reference, one to three seconds old, came before almost
  // every mark read now (they are read a step after they were queued): one
  // read then. A negative or failed one means the mark came first.
  const int previous = 1 - clock_current_;
  float ms = 0;
  if (clock_ref_us_[previous] >= 0 && now_us - clock_ref_us_[previous] < 3e6) {
    if (cudaEventElapsedTime(&ms, clock_ref_[previous], mark) == cudaSuccess && ms > 0)
      return clock_ref_us_[previous] + 1000.0 * static_cast<double>(ms);
    cudaGetLastError();
  }
  // Against the newest reference, usually recorded after the mark, and CUDA
  // documents elapsed times only for end after start: both orders are asked,
  // and the positive one taken, so the answer holds whether or not the
  // driver reports negative times.
  float after_ref = 0, before_ref = 0;
  const cudaEvent_t ref = clock_ref_[clock_current_];
  if (cudaEventElapsedTime(&after_ref, ref, mark) != cudaSuccess ||
      cudaEventElapsedTime(&before_ref, mark, ref) != cudaSuccess) {
    cudaGetLastError();  // e.g. a captured mark before the graph's first replay
    return std::nullopt;
  }
  const double ref_ms = after_ref > 0 ? after_ref : -static_cast<double>(before_ref);
  return clock_ref_us_[clock_current_] + 1000.0 * ref_ms;
}

void CudaBackend::calibrate_clock() {
  if (!clock_stream_) {
    STRATA_CUDA(cudaStreamCreateWithFlags(&clock_stream_, cudaStreamNonBlocking));
    for (cudaEvent_t& ref : clock_ref_) STRATA_CUDA(cudaEventCreate(&ref));
    STRATA_CUDA(cudaEventCreate(&clock_probe_));
  }
  // The other reference is recorded again; this one stays, as the previous.
  // Unknown until measured (a failure below leaves it so, not stale).
  clock_current_ = 1 - clock_current_;
  clock_ref_us_[clock_current_] = -1;
  // Up to five trials, until one waits under 20 us; the shortest wait's
  // event becomes the reference (a trial records the probe, which changes
  // places with the reference when it waited less).
  constexpr int kTrials = 5;
  constexpr double kGoodWait = 20e-6;
  double best_wait = std::numeric_limits<double>::infinity(), best_mid = 0;
  for (int trial = 0; trial < kTrials && best_wait > kGoodWait; ++trial) {
    const double before = monotonic_seconds();
    STRATA_CUDA(cudaEventRecord(clock_probe_, clock_stream_));
    STRATA_CUDA(cudaEventSynchronize(clock_probe_));
    const double after = monotonic_seconds();
    if (after - before < best_wait) {
      best_wait = after - before;
      best_mid = 0.5 * (before + after);
      std::swap(clock_probe_, clock_ref_[clock_current_]);
    }
  }
  clock_ref_us_[clock_current_] = best_mid * 1e6;
}

void CudaBackend::wait_event(const EventPtr& event) {
  if (!event) return;  // a host device's point: already complete
  STRATA_CUDA(cudaStreamWaitEvent(enter(), cuda_event_of(event, device().str(), "wait_event"), 0));
}

void CudaBackend::wait_host(const EventPtr& event) {
  if (!event) return;  // a host device's point: already complete
  const cudaEvent_t e = cuda_event_of(event, device().str(), "wait_host");
  refuse_while_capturing("a synchronisation");
  counters().syncs++;
  enter();
  const cudaError_t r = cudaEventSynchronize(e);
  if (r != cudaSuccess) throw queued_failure(r);
}

void CudaBackend::begin_capture() {
  STRATA_CUDA(cudaStreamBeginCapture(enter(), cudaStreamCaptureModeRelaxed));
  std::lock_guard lock(capture_mutex_);
  capturing_ = true;
}

namespace {
// The kernels, copies and fills of a captured graph (its event and memory
// nodes left out); 0 where the runtime cannot list them.
int64_t graph_operations(cudaGraph_t graph) {
  size_t n = 0;
  if (cudaGraphGetNodes(graph, nullptr, &n) != cudaSuccess) return cudaGetLastError(), 0;
  std::vector<cudaGraphNode_t> nodes(n);
  if (n == 0 || cudaGraphGetNodes(graph, nodes.data(), &n) != cudaSuccess) return cudaGetLastError(), 0;
  int64_t operations = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    if (cudaGraphNodeGetType(node, &type) != cudaSuccess) return cudaGetLastError(), 0;
    operations += type == cudaGraphNodeTypeKernel || type == cudaGraphNodeTypeMemcpy || type == cudaGraphNodeTypeMemset;
  }
  return operations;
}
}  // namespace

GraphPtr CudaBackend::end_capture() {
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(enter(), &graph);
  std::vector<void*> deferred;
  size_t escaped = 0;
  {
    std::lock_guard lock(capture_mutex_);
    capturing_ = false;
    deferred.swap(deferred_frees_);
    escaped = captured_allocations_.size();
    captured_allocations_.clear();
  }
  // Without a graph to replay, the buffers released during the capture are
  // free at once.
  const auto release = [&] {
    for (void* p : deferred) deallocate(p, 0);
  };
  if (ended != cudaSuccess) {
    release();
    cuda::throw_cuda(ended, "cudaStreamEndCapture", __FILE__, __LINE__);
  }
  if (escaped > 0) {
    release();
    cudaGraphDestroy(graph);
    throw runtime_error(device().str() + ": " + std::to_string(escaped) +
                        " allocations made during the capture are still in use at its end");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  if (e != cudaSuccess) {
    release();
    cudaGraphDestroy(graph);
    cuda::throw_cuda(e, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  // Replays use the graph's own memory, apart from the pool: what the pool
  // keeps unused from the op-by-op steps is given back, so a model that
  // fits op by op fits replayed too.
  if (cudaMemPoolTrimTo(pool_, 0) != cudaSuccess) cudaGetLastError();
  counters().graph_operations = graph_operations(graph);
  return std::make_shared<CudaGraph>(graph, exec, *this, index_, std::move(deferred));
}

void CudaBackend::replay(const GraphPtr& graph) {
  auto* g = dynamic_cast<const CudaGraph*>(graph.get());
  if (!g || !g->owned_by(this)) throw runtime_error(device().str() + ": replay given a graph of another device");
  // The graph's branch nodes use the side branch's reduction scratch and
  // cuBLASLt workspace by address: another thread's branch (a second run on
  // this device) is joined before the launch, and none forks until it is
  // queued, so the two never run beside each other.
  Branch* b = nullptr;
  {
    std::lock_guard lock(branch_mutex_);
    b = branch_.get();
  }
  if (b)
    while (b->busy.exchange(true)) std::this_thread::yield();
  struct Release {
    Branch* b;
    ~Release() {
      if (b) b->busy = false;
    }
  } release{b};
  cudaError_t e = cudaGraphLaunch(g->exec, enter());
  // A launch maps the graph's memory, apart from the pool's; op-by-op steps
  // since the last replay (a partial batch, evaluation) may have grown the
  // pool, which keeps what it has: given back once, then the launch again.
  if (e == cudaErrorMemoryAllocation && release_cached_memory()) e = cudaGraphLaunch(g->exec, stream_);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw device_memory_exhausted(out_of_memory(0) + " (replaying the captured step: --no-graphs runs it op by op)",
                                  device().str());
  }
  if (e != cudaSuccess) cuda::throw_cuda(e, "cudaGraphLaunch", __FILE__, __LINE__);
}

void* CudaBackend::scratch(void*& buffer, size_t& capacity, size_t bytes) {
  if (bytes <= capacity) return buffer;
  // Grown inside a capture, the buffer would be the graph's memory and
  // outlive it (end_capture refuses that, and this pointer would dangle).
  // The step's first, op-by-op run sizes it, so this means a new shape.
  refuse_while_capturing("growing a scratch buffer (the op-by-op step before the capture sizes it)");
  // The old buffer is kept, not freed: a step graph captured earlier may
  // still name it, and replaying that graph must not touch freed memory.
  // It grows a few times in a run at most.
  // Allocated before the old one is retired: out of memory, it stays in use.
  void* grown = allocate(bytes);
  if (buffer) retired_scratch_.push_back(buffer);
  buffer = grown;
  capacity = bytes;
  return buffer;
}

// ---- dense kernels -------------------------------------------------------------

void CudaBackend::gemm_bias(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                            const float* bias, float* c) {
  cudaStream_t s = enter();
  // An empty product or none to add: the plain way (it handles k = 0).
  if (!bias || m == 0 || n == 0 || k == 0) return Backend::gemm_bias(trans_a, trans_b, m, n, k, a, b, bias, c);
  if (!gemm_->run(s, trans_a, trans_b, m, n, k, 1.0f, a, b, 0.0f, c, bias, gemm_workspace()))
    cuda::add_bias_rows(s, c, bias, m, n);
}

void CudaBackend::gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                       const float* b, float beta, float* c) {
  cudaStream_t s = enter();
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // An empty product (a replica with no examples): C = beta * C, and C is
    // not read when beta is 0 (it may hold garbage, even NaN).
    if (beta == 0.0f) STRATA_CUDA(cudaMemsetAsync(c, 0, static_cast<size_t>(m * n) * sizeof(float), s));
    else cuda::axpby(s, m * n, 0.0f, c, beta, c);
    return;
  }
  gemm_->run(s, trans_a, trans_b, m, n, k, alpha, a, b, beta, c, nullptr, gemm_workspace());
}

void CudaBackend::add_bias_rows(float* y, const float* bias, int64_t rows, int64_t cols) {
  cuda::add_bias_rows(enter(), y, bias, rows, cols);
}

void CudaBackend::sum_rows(const float* x, int64_t rows, int64_t cols, float* out, bool accumulate) {
  // A column reduction in double, one launch (was a product with a row of
  // ones: in TF32 mode that rounded the bias gradient's terms to TF32).
  cudaStream_t s = enter();
  std::lock_guard lock(scratch_mutex_);
  cuda::sum_rows(s, x, rows, cols, out, accumulate, reduce_scratch(s, rows, cols));
}

cuda::ReduceScratch CudaBackend::reduce_scratch(cudaStream_t s, int64_t rows, int64_t channels) {
  ReduceBuffers& r = in_branch() ? branch_->reduce : reduce_main_;
  grow_reduce(r, cuda::channel_reduce_scratch_size(rows, channels), s);
  return {r.partials, static_cast<unsigned*>(r.tickets)};
}

void CudaBackend::grow_reduce(ReduceBuffers& r, const cuda::ReduceScratchSize& size, cudaStream_t s) {
  scratch(r.partials, r.partial_bytes, size.partial_bytes);
  const void* before = r.tickets;
  scratch(r.tickets, r.ticket_bytes, size.ticket_bytes);
  // New tickets start at zero, and every reduction leaves them so.
  if (r.tickets != before) STRATA_CUDA(cudaMemsetAsync(r.tickets, 0, r.ticket_bytes, s));
}

void CudaBackend::activation_forward(Activation act, const float* x, float* y, int64_t rows, int64_t cols) {
  cuda::activation_forward(enter(), act, x, y, rows, cols);
}

void CudaBackend::bias_activation(Activation act, float* y, const float* bias, int64_t rows, int64_t cols) {
  if (!bias || act == Activation::None || act == Activation::Softmax)
    return Backend::bias_activation(act, y, bias, rows, cols);
  cuda::bias_activation(enter(), act, y, bias, rows, cols);
}

void CudaBackend::activation_backward(Activation act, const float* y, const float* dy, float* dx, int64_t rows,
                                      int64_t cols) {
  cuda::activation_backward(enter(), act, y, dy, dx, rows, cols);
}

void CudaBackend::bias_activation_backward(Activation act, const float* y, const float* dy, float* dx, float* dbias,
                                           int64_t rows, int64_t cols) {
  if (act == Activation::Softmax) return Backend::bias_activation_backward(act, y, dy, dx, dbias, rows, cols);
  cudaStream_t s = enter();
  std::lock_guard lock(scratch_mutex_);
  cuda::bias_activation_backward(s, act, y, dy, dx, dbias, rows, cols, reduce_scratch(s, rows, cols));
}

void CudaBackend::sparse_softmax_xent(const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                      float* loss, float* dlogits) {
  cuda::sparse_softmax_xent(enter(), logits, labels, rows, cols, loss, dlogits);
}

void CudaBackend::sparse_softmax_xent_average(const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                              const float* scale, float* error, float* loss, float* dlogits, float* total) {
  cuda::sparse_softmax_xent_average(enter(), logits, labels, rows, cols, scale, error, loss, dlogits, total);
}

void CudaBackend::softmax_xent(const float* logits, const float* targets, int64_t rows, int64_t cols, float* loss,
                               float* dlogits) {
  cuda::softmax_xent(enter(), logits, targets, rows, cols, loss, dlogits);
}

void CudaBackend::axpby(int64_t n, float alpha, const float* x, float beta, float* y) {
  cuda::axpby(enter(), n, alpha, x, beta, y);
}

void CudaBackend::dropout(int64_t n, float rate, uint64_t seed, uint64_t stream, const int32_t* call, uint64_t counter,
                          const float* x, float* y, float* mask) {
  cuda::dropout(enter(), n, rate, seed, stream, call, counter, x, y, mask);
}

void CudaBackend::mul(int64_t n, const float* a, const float* b, float* y) { cuda::mul(enter(), n, a, b, y); }

void CudaBackend::scale_rows(const float* x, const float* scale, int64_t rows, int64_t cols, float* y) {
  cuda::scale_rows(enter(), x, scale, rows, cols, y);
}

void CudaBackend::log_clamp(int64_t n, const float* x, float eps, float* y) { cuda::log_clamp(enter(), n, x, eps, y); }

void CudaBackend::log_clamp_backward(int64_t n, const float* x, float eps, const float* dy, float* dx) {
  cuda::log_clamp_backward(enter(), n, x, eps, dy, dx);
}

void CudaBackend::pixels_to_float(int64_t rows, int64_t features, const uint8_t* in, float scale, const float* mean,
                                  const float* inv_std, float* out) {
  cuda::pixels_to_float(enter(), rows, features, in, scale, mean, inv_std, out);
}

void CudaBackend::gather_rows(const uint8_t* table, int64_t row_bytes, const int32_t* rows, int64_t n, uint8_t* out) {
  cuda::gather_rows(enter(), table, row_bytes, rows, n, out);
}

void CudaBackend::gather_examples(const uint8_t* pixels, int64_t row_bytes, const int32_t* labels, const int32_t* rows,
                                  int64_t n, float scale, const float* mean, const float* inv_std, float* features,
                                  int32_t* labels_out) {
  cuda::gather_examples(enter(), pixels, row_bytes, labels, rows, n, scale, mean, inv_std, features, labels_out);
}

void CudaBackend::scaled_sum(int64_t n, const float* x, const float* scale, float* out) {
  cuda::scaled_sum(enter(), n, x, scale, out);
}

void CudaBackend::broadcast_scaled(int64_t n, const float* g, const float* scale, float* y) {
  cuda::broadcast_scaled(enter(), n, g, scale, y);
}

void CudaBackend::add_scalar(int64_t n, float value, float* x) { cuda::add_scalar(enter(), n, value, x); }

void CudaBackend::increment(int64_t n, int32_t* x) { cuda::increment(enter(), n, x); }

void CudaBackend::argmax_rows(const float* x, int64_t rows, int64_t cols, int32_t* out) {
  cuda::argmax_rows(enter(), x, rows, cols, out);
}

void CudaBackend::count_correct(const float* predictions, const int32_t* labels, int64_t rows, int64_t cols,
                                float* count) {
  cuda::count_correct(enter(), predictions, labels, rows, cols, count);
}

void CudaBackend::gather_step_stats(const float* loss, const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                    float* error, float* stats) {
  cuda::gather_step_stats(enter(), loss, logits, labels, rows, cols, error, stats);
}

void CudaBackend::check_labels(const int32_t* labels, int64_t n, int64_t classes, float* error) {
  cuda::check_labels(enter(), labels, n, classes, error);
}

void CudaBackend::sgd_update(int64_t n, float* w, const float* g, float* velocity, const float* lr, float momentum,
                             bool nesterov, WeightStores) {
  cuda::sgd_update(enter(), n, w, g, velocity, lr, momentum, nesterov);
}

void CudaBackend::adam_update(int64_t n, float* w, const float* g, float* m, float* v, const AdamParams& p,
                              const float* lr_step, WeightStores) {
  cuda::adam_update(enter(), n, w, g, m, v, p, lr_step);
}

void CudaBackend::adam_update_many(std::span<const AdamTensor> tensors, const AdamParams& p, const float* lr_step,
                                   WeightStores) {
  cuda::adam_update_many(enter(), tensors, p, lr_step);
}

// ---- images and batch normalisation --------------------------------------------

void CudaBackend::im2col(const Window2D& w, const float* x, float* col) { cuda::im2col(enter(), w, x, col); }
void CudaBackend::col2im(const Window2D& w, const float* col, float* dx) { cuda::col2im(enter(), w, col, dx); }

void CudaBackend::make_cudnn() {
#ifdef STRATA_WITH_CUDNN
  std::call_once(cudnn_once_, [this] {
    cudnn_unavailable_ = cuda::CudnnLibrary::unavailable();
    if (!cudnn_unavailable_.empty()) return;
    // cuDNN 9's libcudnn.so.9 is a shim that loads its engines at first use:
    // a broken or mismatched install fails here (cudnnCreate), and the
    // convolutions then go the default way rather than fail every step.
    try {
      cudnn_ = std::make_unique<cuda::CudnnConvolution>(*this, device().str(), stream_, cuda::tf32_requested(),
                                                        CUDNN_TENSOR_NHWC);
      cudnn_nchw_ = std::make_unique<cuda::CudnnConvolution>(*this, device().str(), stream_, cuda::tf32_requested(),
                                                             CUDNN_TENSOR_NCHW);
      const char* graph = std::getenv("STRATA_CUDNN_GRAPH");
      if (!graph || std::string(graph) != "0") {
        cudnn_graph_ = std::make_unique<cuda::CudnnGraphConvolution>(*this, device().str(), stream_, cuda::tf32_requested(),
                                                                     CUDNN_TENSOR_NHWC);
        cudnn_graph_nchw_ = std::make_unique<cuda::CudnnGraphConvolution>(*this, device().str(), stream_,
                                                                          cuda::tf32_requested(), CUDNN_TENSOR_NCHW);
      }
    } catch (const std::exception& e) {
      cudnn_.reset();
      cudnn_nchw_.reset();
      cudnn_graph_.reset();
      cudnn_graph_nchw_.reset();
      cudnn_unavailable_ = e.what();
      std::fprintf(stderr, "%s: cuDNN cannot be used (%s); convolutions use im2col and cuBLASLt\n", device().str().c_str(),
                   e.what());
    }
  });
#endif
}

// Images of a slice whose patch matrix takes at most half the GPU's L2
// cache, so that the product reads what im2col just wrote from the cache
// rather than from device memory (the whole batch's matrix holds kh * kw
// copies of the input: 640 MiB for the TF-tutorial CNN's second layer at
// batch 1024).
int64_t CudaBackend::images_per_slice(const Window2D& w) const {
  if (l2_bytes_ <= 0) return w.batch;  // not reported: no slicing
  const int64_t per_image = w.out_h * w.out_w * w.kernel_h * w.kernel_w * w.channels * int64_t{sizeof(float)};
  return std::max<int64_t>(1, l2_bytes_ / 2 / std::max<int64_t>(1, per_image));
}

// Which ways beside whole-batch im2col this window's direction has: cuDNN's
// legacy algorithms and its graph API's engines, each in either layout,
// where it loads and takes the direction (its padding gives the window, it
// plans it), im2col over slices where the batch's patch matrix outgrows
// the cache.
CudaBackend::Offered CudaBackend::offered(const Window2D& w, int64_t filters, ConvolutionDirection d) {
  Offered o;
#ifdef STRATA_WITH_CUDNN
  // cuDNN's handles, plans and timing buffers are the main stream's: a side
  // branch (a weight gradient) neither sets them up nor asks them.
  if (!in_branch()) {
    enter();  // the heuristics a new shape asks run on this thread: with this GPU current
    make_cudnn();
    o.nhwc = cudnn_ && cudnn_->takes(w, filters, d);
    o.nchw = cudnn_nchw_ && cudnn_nchw_->takes(w, filters, d);
    o.graph_nhwc = cudnn_graph_ && cudnn_graph_->takes(w, filters, d);
    o.graph_nchw = cudnn_graph_nchw_ && cudnn_graph_nchw_->takes(w, filters, d);
  }
#endif
  o.slices = images_per_slice(w) < w.batch;
  return o;
}

bool CudaBackend::has_conv2d(const Window2D& w, int64_t filters) {
  for (const auto d :
       {ConvolutionDirection::Forward, ConvolutionDirection::BackwardData, ConvolutionDirection::BackwardFilter}) {
    const Offered o = offered(w, filters, d);
    if (o.nhwc || o.nchw || o.graph_nhwc || o.graph_nchw || o.slices) return true;
  }
  return false;
}

std::vector<std::string> CudaBackend::convolution_ways(const Window2D& w, int64_t filters, ConvolutionDirection d) {
  std::vector<std::string> names;
  for (const auto& way : ways_for(w, filters, d, {}, {}, {})) names.emplace_back(way.name);
  return names;
}

void CudaBackend::force_convolution_way(const std::string& way) { conv_ways_.force(way); }

// The ways this window takes, cuDNN's legacy NHWC first (the one a step captured before
// any timing keeps), im2col over the whole batch last; `im2col` is given the
// images per slice.
std::vector<cuda::ConvolutionWays::Way> CudaBackend::ways_for(const Window2D& w, int64_t filters, ConvolutionDirection d,
                                                              const CudnnCall& nhwc, const CudnnCall& nchw,
                                                              const std::function<void(int64_t)>& im2col) {
  // A side branch's convolution (a weight gradient) takes the im2col ways (offered()).
  const Offered o = offered(w, filters, d);
  std::vector<cuda::ConvolutionWays::Way> ways;
  if (o.nhwc) ways.push_back({"cudnn", [this, nhwc] { return nhwc(*cudnn_); }});
  if (o.nchw) ways.push_back({"cudnn-nchw", [this, nchw] { return nchw(*cudnn_nchw_); }});
  if (o.graph_nhwc) ways.push_back({"cudnn-graph", [this, nhwc] { return nhwc(*cudnn_graph_); }});
  if (o.graph_nchw) ways.push_back({"cudnn-graph-nchw", [this, nchw] { return nchw(*cudnn_graph_nchw_); }});
  if (o.slices)
    ways.push_back({"im2col-slices", [im2col, images = images_per_slice(w)] {
                      im2col(images);
                      return true;
                    }});
  ways.push_back({"im2col", [im2col, images = w.batch] {
                    im2col(images);
                    return true;
                  }});
  return ways;
}

namespace {
int64_t patch_of(const Window2D& w) { return w.kernel_h * w.kernel_w * w.channels; }
}  // namespace

// The layers' kernels are (kh * kw * channels, filters) matrices: NHWC's
// filters (filters, kh, kw, channels) are their transposes, NCHW's
// (filters, channels, kh, kw) those with each filter's (kh * kw, channels)
// transposed in turn.
Tensor CudaBackend::cudnn_kernel(const Window2D& w, int64_t filters, const float* kernel, bool nchw) {
  const int64_t patch = patch_of(w);
  Tensor k = Tensor::empty(Shape{filters, patch}, device());
  cuda::transpose(enter(), kernel, patch, filters, k.ptr());
  if (!nchw) return k;
  Tensor kc = Tensor::empty(Shape{filters, patch}, device());
  cuda::transpose(enter(), k.ptr(), w.kernel_h * w.kernel_w, w.channels, kc.ptr(), filters);
  return kc;
}

// Images between the layers' NHWC and NCHW: (n, h*w, c) <-> (n, c, h*w).
Tensor CudaBackend::to_nchw(const float* x, int64_t n, int64_t pixels, int64_t channels) {
  Tensor t = Tensor::empty(Shape{n, channels, pixels}, device());
  cuda::transpose(enter(), x, pixels, channels, t.ptr(), n);
  return t;
}

void CudaBackend::from_nchw(const Tensor& t, int64_t n, int64_t pixels, int64_t channels, float* x) {
  cuda::transpose(enter(), t.ptr(), channels, pixels, x, n);
}

// Each direction runs the way conv_ways_ timed fastest for the shape.
void CudaBackend::conv2d(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) {
  convolve(w, filters, x, kernel, y, false);
}

Tensor CudaBackend::conv2d_keeping_patches(const Window2D& w, int64_t filters, const float* x, const float* kernel,
                                           float* y) {
  return convolve(w, filters, x, kernel, y, true);
}

// The forward convolution. `kept` follows the way whose output stands (a
// race runs every way, and ends with the fastest's): the whole batch's patch
// matrix where that was im2col and `keep` asks for it, else nothing, so the
// first step's kernel gradient is computed as every later step's.
Tensor CudaBackend::convolve(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y, bool keep) {
  const int64_t in_px = w.height * w.width, out_px = w.out_h * w.out_w;
  Tensor kept;
  const auto ways = ways_for(
      w, filters, ConvolutionDirection::Forward,
      [&](cuda::CudnnConvolver& c) {
        kept = Tensor();
        return c.forward(w, filters, x, cudnn_kernel(w, filters, kernel, false).ptr(), y);
      },
      [&](cuda::CudnnConvolver& c) {
        kept = Tensor();
        Tensor yt = Tensor::empty(Shape{w.batch, filters, out_px}, device());
        if (!c.forward(w, filters, to_nchw(x, w.batch, in_px, w.channels).ptr(), cudnn_kernel(w, filters, kernel, true).ptr(),
                       yt.ptr()))
          return false;
        from_nchw(yt, w.batch, out_px, filters, y);
        return true;
      },
      [&](int64_t images) {
        kept = Tensor();
        if (keep && images >= w.batch) kept = conv2d_im2col_kept(w, filters, x, kernel, y);
        else conv2d_im2col(w, filters, x, kernel, y, images);
      });
  conv_ways_.run(w, filters, ConvolutionDirection::Forward, in_branch(), enter(), device(), ways);
  return kept;
}

void CudaBackend::conv2d_backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel,
                                       float* dx) {
  const int64_t in_px = w.height * w.width, out_px = w.out_h * w.out_w;
  const auto ways = ways_for(
      w, filters, ConvolutionDirection::BackwardData,
      [&](cuda::CudnnConvolver& c) {
        return c.backward_data(w, filters, dy, cudnn_kernel(w, filters, kernel, false).ptr(), dx);
      },
      [&](cuda::CudnnConvolver& c) {
        Tensor dxt = Tensor::empty(Shape{w.batch, w.channels, in_px}, device());
        if (!c.backward_data(w, filters, to_nchw(dy, w.batch, out_px, filters).ptr(),
                             cudnn_kernel(w, filters, kernel, true).ptr(), dxt.ptr()))
          return false;
        from_nchw(dxt, w.batch, in_px, w.channels, dx);
        return true;
      },
      [&](int64_t images) { conv2d_backward_data_im2col(w, filters, dy, kernel, dx, images); });
  conv_ways_.run(w, filters, ConvolutionDirection::BackwardData, in_branch(), enter(), device(), ways);
}

void CudaBackend::conv2d_backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy,
                                         float* dkernel) {
  const int64_t in_px = w.height * w.width, out_px = w.out_h * w.out_w, patch = patch_of(w);
  const auto ways = ways_for(
      w, filters, ConvolutionDirection::BackwardFilter,
      [&](cuda::CudnnConvolver& c) {
        Tensor dk = Tensor::empty(Shape{filters, patch}, device());
        if (!c.backward_filter(w, filters, x, dy, dk.ptr())) return false;
        cuda::transpose(enter(), dk.ptr(), filters, patch, dkernel);
        return true;
      },
      [&](cuda::CudnnConvolver& c) {
        // (filters, channels, kh * kw) -> (filters, kh * kw, channels) -> the layer's matrix.
        Tensor dkc = Tensor::empty(Shape{filters, patch}, device());
        if (!c.backward_filter(w, filters, to_nchw(x, w.batch, in_px, w.channels).ptr(),
                               to_nchw(dy, w.batch, out_px, filters).ptr(), dkc.ptr()))
          return false;
        Tensor dk = Tensor::empty(Shape{filters, patch}, device());
        cuda::transpose(enter(), dkc.ptr(), w.channels, w.kernel_h * w.kernel_w, dk.ptr(), filters);
        cuda::transpose(enter(), dk.ptr(), filters, patch, dkernel);
        return true;
      },
      [&](int64_t images) { conv2d_backward_filter_im2col(w, filters, x, dy, dkernel, images); });
  conv_ways_.run(w, filters, ConvolutionDirection::BackwardFilter, in_branch(), enter(), device(), ways);
}

void CudaBackend::max_pool(const Window2D& w, const float* x, const float* bias, Activation act, float* y, int32_t* argmax) {
  require_pool_activation(act);
  cuda::max_pool(enter(), w, x, bias, act == Activation::Relu, y, argmax);
}
void CudaBackend::max_pool_backward(const Window2D& w, const float* dy, const int32_t* argmax, float* dx) {
  cuda::max_pool_backward(enter(), w, dy, argmax, dx);
}
void CudaBackend::avg_pool(const Window2D& w, const float* x, float* y) { cuda::avg_pool(enter(), w, x, y); }
void CudaBackend::avg_pool_backward(const Window2D& w, const float* dy, float* dx) {
  cuda::avg_pool_backward(enter(), w, dy, dx);
}

void CudaBackend::channel_sums(const float* x, int64_t rows, int64_t channels, float* sum, float* sumsq) {
  cudaStream_t s = enter();
  std::lock_guard lock(scratch_mutex_);
  cuda::channel_sums(s, x, rows, channels, sum, sumsq, reduce_scratch(s, rows, channels));
}

void CudaBackend::batch_norm_stats(const float* sums, int64_t channels, float epsilon, float* mean, float* inv_std) {
  cuda::batch_norm_stats(enter(), sums, channels, epsilon, mean, inv_std);
}

void CudaBackend::batch_norm_inference_stats(const float* moving_mean, const float* moving_var, int64_t channels,
                                             float epsilon, float* mean, float* inv_std) {
  cuda::batch_norm_inference_stats(enter(), moving_mean, moving_var, channels, epsilon, mean, inv_std);
}

void CudaBackend::batch_norm_moving_update(const float* mean, const float* inv_std, const float* count,
                                           int64_t channels, float epsilon, float momentum, float* moving_mean,
                                           float* moving_var) {
  cuda::batch_norm_moving_update(enter(), mean, inv_std, count, channels, epsilon, momentum, moving_mean, moving_var);
}

void CudaBackend::batch_norm_apply(const float* x, int64_t rows, int64_t channels, const float* mean,
                                   const float* inv_std, const float* gamma, const float* beta, float* y) {
  cuda::batch_norm_apply(enter(), x, rows, channels, mean, inv_std, gamma, beta, y);
}

void CudaBackend::batch_norm_apply_relu(const float* x, int64_t rows, int64_t channels, const float* mean,
                                        const float* inv_std, const float* gamma, const float* beta, float* y) {
  cuda::batch_norm_apply(enter(), x, rows, channels, mean, inv_std, gamma, beta, y, true);
}

void CudaBackend::batch_norm_relu_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels,
                                                  const float* mean, const float* inv_std, const float* gamma,
                                                  const float* beta, float* sum_dz, float* sum_dz_xhat) {
  cudaStream_t s = enter();
  std::lock_guard lock(scratch_mutex_);
  cuda::batch_norm_relu_backward_reduce(s, dy, x, rows, channels, mean, inv_std, gamma, beta, sum_dz, sum_dz_xhat,
                                        reduce_scratch(s, rows, channels));
}

void CudaBackend::batch_norm_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels,
                                             const float* mean, const float* inv_std, float* sum_dy,
                                             float* sum_dy_xhat) {
  cudaStream_t s = enter();
  std::lock_guard lock(scratch_mutex_);
  cuda::batch_norm_backward_reduce(s, dy, x, rows, channels, mean, inv_std, sum_dy, sum_dy_xhat,
                                   reduce_scratch(s, rows, channels));
}

void CudaBackend::batch_norm_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels,
                                            const float* mean, const float* inv_std, const float* gamma,
                                            const float* sum_dy, const float* sum_dy_xhat, const float* count,
                                            float* dx) {
  cuda::batch_norm_backward_apply(enter(), dy, x, rows, channels, mean, inv_std, gamma, nullptr, sum_dy, sum_dy_xhat, count,
                                  dx);
}

void CudaBackend::batch_norm_relu_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels,
                                                 const float* mean, const float* inv_std, const float* gamma,
                                                 const float* beta, const float* sum_dz, const float* sum_dz_xhat,
                                                 const float* count, float* dx) {
  cuda::batch_norm_backward_apply(enter(), dy, x, rows, channels, mean, inv_std, gamma, beta, sum_dz, sum_dz_xhat, count, dx,
                                  true);
}

}  // namespace strata
