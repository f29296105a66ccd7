#include "distribute/collectives/nccl/NcclAllReduce.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string_view>

#include "backend/Backend.h"
#include "backend/cuda/CudaBackend.h"
#include "backend/cuda/CudaCheck.h"
#include "core/Clock.h"
#include "core/Error.h"
#include "distribute/collectives/nccl/NcclLibrary.h"
#include "trace/DeviceSpans.h"

namespace strata {

namespace {
const nccl::NcclLibrary& lib() { return nccl::NcclLibrary::get(); }

// Makes `index` the calling thread's CUDA device, through CudaBackend's
// record of each thread's device (its calls skip setting the device they
// find recorded), and restores the previous one after. Unchecked (in a
// destructor, after a GPU's error made every call fail): errors are
// cleared, nothing throws.
class DeviceGuard {
public:
  explicit DeviceGuard(int index, bool checked = true) : previous_(CudaBackend::thread_device()) {
    if (previous_ == index) return;
    const cudaError_t e = CudaBackend::set_thread_device(index);
    if (!checked) cudaGetLastError();
    else STRATA_CUDA(e);
  }
  // Back to the thread's device where it had one. A thread that never chose
  // one (the dashboard's teardown thread) stays on this GPU: going back to
  // device 0 would give gpu:0 a context (and its memory) in a run that may
  // not use it.
  ~DeviceGuard() {
    if (previous_ >= 0 && CudaBackend::thread_device() != previous_ &&
        CudaBackend::set_thread_device(previous_) != cudaSuccess)
      cudaGetLastError();
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

private:
  int previous_;
};

cudaStream_t compute_stream(const Device& device) { return static_cast<CudaBackend&>(backend_for(device)).stream(); }
}  // namespace

NcclAllReduce::NcclAllReduce(std::shared_ptr<Cluster> cluster) : cluster_(std::move(cluster)) {
  if (cluster_) timeout_ = cluster_->timeout_seconds();
}

NcclAllReduce::~NcclAllReduce() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  // Communicators with an unfinished or failed collective on any GPU are
  // aborted: destroying them would wait for peers that may be gone (a
  // replica that threw before its part). fail() aborted those no step graph
  // held (Gpu::captured); the others end here, after the graph.
  bool finished = error_.empty();
  for (Gpu& g : gpus_) {
    // On the GPU's own device: the dashboard destroys a run on a thread of
    // its own, whose current device (0) would otherwise get a context.
    DeviceGuard guard(g.index, false);
    for (const Gpu::Pending& p : g.pending) finished = finished && cudaEventQuery(p.event) == cudaSuccess;
    finished = finished && (!g.done || g.done_captured || cudaEventQuery(g.done) == cudaSuccess);
  }
  cudaGetLastError();  // a query's error is an answer here
  release(finished);
}

void NcclAllReduce::release(bool finished) {
  for (Gpu& g : gpus_) {
    DeviceGuard guard(g.index, false);
    if (g.comm && !g.comm_ended) {
      if (finished) lib().ncclCommDestroy(g.comm);
      else lib().ncclCommAbort(g.comm);
    }
    for (const Gpu::Pending& p : g.pending) cudaEventDestroy(p.event);
    for (cudaEvent_t e : g.spare) cudaEventDestroy(e);
    if (g.ready) cudaEventDestroy(g.ready);
    if (g.done) cudaEventDestroy(g.done);
    if (g.stream) {
      // An aborted collective's stream may still hold the leader's copies
      // into the other replicas' buckets, which are freed after this.
      if (!finished) cudaStreamSynchronize(g.stream);
      cudaStreamDestroy(g.stream);
    }
  }
  cudaGetLastError();  // a failed GPU's answers here are not news
  gpus_.clear();
  gpu_of_.clear();
}

bool NcclAllReduce::enabled(const std::vector<Device>& devices, std::string* why_not) const {
  for (const Device& d : devices)
    if (d.kind != DeviceKind::Gpu) {
      if (why_not) *why_not = "nccl serves GPU replicas only, not " + d.str();
      return false;
    }
  if (std::string why = nccl::NcclLibrary::unavailable(); !why.empty()) {
    if (why_not) *why_not = why;
    return false;
  }
  return true;
}

bool NcclAllReduce::preferred(const std::vector<Device>& devices) const {
  if (cluster_ && cluster_->size() > 1) return true;
  std::set<int> distinct;
  for (const Device& d : devices) distinct.insert(d.index);
  return distinct.size() > 1;
}

void NcclAllReduce::all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) {
  start_all_reduce_sum(group, replica, buffer);
  wait_all(group, replica);
}

void NcclAllReduce::join(ReplicaGroup& group, int replica) {
  if (!initialized_) {
    group.barrier.arrive_and_wait();
    if (replica == 0) init(group);
    group.barrier.arrive_and_wait();
  }
  throw_if_failed();
}

void NcclAllReduce::start_all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) {
  const auto me = static_cast<size_t>(replica);
  Backend& be = backend_for(buffer.device);
  group.buffers[me] = buffer.data;
  group.ready[me] = be.record_event();
  group.barrier.arrive_and_wait();  // every buffer and its ready event published
  join(group, replica);

  Gpu& g = gpus_[static_cast<size_t>(gpu_of_[me])];
  if (g.leader == replica) {
    // The GPU's replicas sum into the leader's buffer, in replica order.
    for (int r : g.replicas) {
      if (r == replica) continue;
      be.wait_event(group.ready[static_cast<size_t>(r)]);
      be.axpby(static_cast<int64_t>(buffer.size), 1.0f, group.buffers[static_cast<size_t>(r)], 1.0f, buffer.data);
    }
    DeviceGuard guard(g.index);
    const cudaStream_t compute = compute_stream(buffer.device);
    STRATA_CUDA(cudaEventRecord(g.ready, compute));
    STRATA_CUDA(cudaStreamWaitEvent(g.stream, g.ready, 0));
    // The step timeline's comm-stream lane: the all-reduce as the GPU ran it.
    const trace::DeviceSpans::Context traced = trace::DeviceSpans::current();
    auto& cuda = static_cast<CudaBackend&>(be);
    EventPtr began = traced.spans ? cuda.record_timing_mark_on(g.stream) : nullptr;
    {
      auto held = use(g, compute);
      check(lib().ncclAllReduce(buffer.data, buffer.data, buffer.size, ncclFloat, ncclSum, g.comm, g.stream), g, held,
            "ncclAllReduce");
    }
    if (began)
      traced.spans->add(buffer.device,
                        trace::Span{trace::SpanKind::AllReduce, trace::Lane{trace::LaneKind::CommStream, replica},
                                    traced.step, 0, 0, static_cast<int64_t>(buffer.bytes())},
                        std::move(began), cuda.record_timing_mark_on(g.stream));
    for (int r : g.replicas)
      if (r != replica)
        STRATA_CUDA(cudaMemcpyAsync(group.buffers[static_cast<size_t>(r)], buffer.data, buffer.bytes(),
                                    cudaMemcpyDeviceToDevice, g.stream));
    std::lock_guard lock(mutex_);
    track(g, compute);
  }
  // Leaders have read the others' buffer addresses; and the done event of
  // each GPU is recorded before any replica waits on it.
  group.barrier.arrive_and_wait();
}

bool NcclAllReduce::supports_sharding(const std::vector<Device>& devices, std::string* why_not) const {
  std::set<int> distinct;
  for (const Device& d : devices)
    if (!distinct.insert(d.index).second) {
      if (why_not) *why_not = "nccl shards among replicas on distinct GPUs only; " + d.str() + " holds several";
      return false;
    }
  return true;
}

template <typename Call>
void NcclAllReduce::grouped_pieces(int replica, const std::vector<DeviceSpan>& tensors, const UpdateShards& shards,
                                   const char* what, Call&& call) {
  Gpu& g = gpus_[static_cast<size_t>(gpu_of_[static_cast<size_t>(replica)])];
  DeviceGuard guard(g.index);
  const cudaStream_t compute = compute_stream(Device{DeviceKind::Gpu, g.index});
  STRATA_CUDA(cudaEventRecord(g.ready, compute));
  STRATA_CUDA(cudaStreamWaitEvent(g.stream, g.ready, 0));
  const auto& api = lib();
  {
    auto held = use(g, compute);
    api.check(api.ncclGroupStart(), "ncclGroupStart");
    for (int owner = 0; owner < shards.replicas(); ++owner) {
      const int root = gpus_[static_cast<size_t>(gpu_of_[static_cast<size_t>(owner)])].rank;
      for (const ShardPiece& p : shards.of(owner)) {
        float* piece = tensors[static_cast<size_t>(p.variable)].data + p.offset;
        const ncclResult_t r = call(piece, static_cast<size_t>(p.count), root, g.comm, g.stream);
        if (r != ncclSuccess && r != ncclInProgress) {
          api.ncclGroupEnd();
          check(r, g, held, what);
        }
      }
    }
    check(api.ncclGroupEnd(), g, held, what);
  }
  {
    std::lock_guard lock(mutex_);
    track(g, compute);
  }
  // The update (after the scatter) and the next forward pass (after the
  // gather) read what these calls wrote.
  STRATA_CUDA(cudaStreamWaitEvent(compute, g.done, 0));
}

// NCCL orders the ranks' calls itself: no barrier beyond the first call's join.
void NcclAllReduce::reduce_scatter_sum(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                                       const UpdateShards& shards) {
  join(group, replica);
  grouped_pieces(replica, tensors, shards, "ncclReduce (the sharded update's reduce-scatter)",
                 [](float* piece, size_t count, int root, ncclComm_t comm, cudaStream_t stream) {
                   // In place: the sum lands in the owner's own piece.
                   return lib().ncclReduce(piece, piece, count, ncclFloat, ncclSum, root, comm, stream);
                 });
}

void NcclAllReduce::all_gather(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                               const UpdateShards& shards) {
  join(group, replica);
  grouped_pieces(replica, tensors, shards, "ncclBroadcast (the sharded update's all-gather)",
                 [](float* piece, size_t count, int root, ncclComm_t comm, cudaStream_t stream) {
                   return lib().ncclBroadcast(piece, piece, count, ncclFloat, root, comm, stream);
                 });
}

void NcclAllReduce::track(Gpu& g, cudaStream_t compute) {
  STRATA_CUDA(cudaEventRecord(g.done, g.stream));
  g.done_captured = cuda::capturing(compute);
  if (g.done_captured) return;  // use() marked the communicator captured
  cudaEvent_t event = nullptr;
  if (g.spare.empty()) {
    STRATA_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  } else {
    event = g.spare.back();
    g.spare.pop_back();
  }
  STRATA_CUDA(cudaEventRecord(event, g.stream));
  g.pending.push_back({event, monotonic_seconds()});
}

void NcclAllReduce::wait_all(ReplicaGroup& /*group*/, int replica) {
  if (!initialized_) return;  // nothing was started
  throw_if_failed();
  const Gpu& g = gpus_[static_cast<size_t>(gpu_of_[static_cast<size_t>(replica)])];
  DeviceGuard guard(g.index);
  std::lock_guard lock(mutex_);
  STRATA_CUDA(cudaStreamWaitEvent(compute_stream(Device{DeviceKind::Gpu, g.index}), g.done, 0));
}

void NcclAllReduce::init(const ReplicaGroup& group) {
  try {
    make_gpus(group);
  } catch (...) {
    // Nothing half-made stays: a later collective starts again from scratch
    // instead of adding the replicas a second time to leaked streams.
    cudaGetLastError();
    release(false);
    throw;
  }
  watchdog_ = std::thread([this] { watch(); });
  initialized_ = true;
}

void NcclAllReduce::make_gpus(const ReplicaGroup& group) {
  gpu_of_.assign(static_cast<size_t>(group.size), -1);
  for (int r = 0; r < group.size; ++r) {
    const Device& d = group.devices[static_cast<size_t>(r)];
    auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const Gpu& g) { return g.index == d.index; });
    if (it == gpus_.end()) {
      Gpu g;
      g.index = d.index;
      g.leader = r;
      gpus_.push_back(std::move(g));
      it = gpus_.end() - 1;
    }
    it->replicas.push_back(r);
    gpu_of_[static_cast<size_t>(r)] = static_cast<int>(it - gpus_.begin());
  }
  for (Gpu& g : gpus_) {
    DeviceGuard guard(g.index);
    int least = 0, greatest = 0;
    STRATA_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    // Gradient all-reduces go ahead of queued compute kernels, as in PyTorch.
    STRATA_CUDA(cudaStreamCreateWithPriority(&g.stream, cudaStreamNonBlocking, greatest));
    STRATA_CUDA(cudaEventCreateWithFlags(&g.ready, cudaEventDisableTiming));
    STRATA_CUDA(cudaEventCreateWithFlags(&g.done, cudaEventDisableTiming));
  }
  create_communicators();
}

void NcclAllReduce::create_communicators() {
  ranks_ = 0;  // a setup that failed before (a worker lost) may have counted
  const bool alone = !cluster_ || cluster_->size() == 1;
  if (alone) create_local_communicators();
  else join_workers_communicator();
  // One process's communicators are blocking: made on return, unless
  // NCCL_COMM_BLOCKING=0 (which NCCL applies over any config), and a
  // collective before they are ready fails. Across workers they are joined
  // once every worker has arrived, within the collective timeout.
  const char* what = alone ? "creating the NCCL communicator" : "joining the NCCL communicator";
  for (Gpu& g : gpus_) {
    auto held = use(g);
    settle(g, held, what);
  }
}

void NcclAllReduce::create_local_communicators() {
  const auto local = static_cast<int>(gpus_.size());
  std::vector<ncclComm_t> comms(gpus_.size());
  std::vector<int> devs;
  std::string names;
  for (const Gpu& g : gpus_) {
    devs.push_back(g.index);
    names += (names.empty() ? "gpu:" : ", gpu:") + std::to_string(g.index);
  }
  lib().check(lib().ncclCommInitAll(comms.data(), local, devs.data()), "creating the NCCL communicator over " + names);
  ranks_ = local;
  for (int i = 0; i < local; ++i) {
    gpus_[static_cast<size_t>(i)].comm = comms[static_cast<size_t>(i)];
    gpus_[static_cast<size_t>(i)].rank = i;
  }
}

// Across workers: every worker's GPUs, in worker rank order, form one
// communicator.
void NcclAllReduce::join_workers_communicator() {
  const auto& api = lib();
  const auto local = static_cast<int>(gpus_.size());
  const std::vector<double> counts = cluster_->all_gather({static_cast<double>(local)});
  int offset = 0;
  for (int r = 0; r < static_cast<int>(counts.size()); ++r) {
    if (r == cluster_->rank()) offset = ranks_;
    ranks_ += static_cast<int>(counts[static_cast<size_t>(r)]);
  }
  refuse_shared_gpus(static_cast<int>(*std::max_element(counts.begin(), counts.end())));
  ncclUniqueId id{};
  if (cluster_->rank() == 0) api.check(api.ncclGetUniqueId(&id), "ncclGetUniqueId");
  cluster_->broadcast(std::as_writable_bytes(std::span<ncclUniqueId>(&id, 1)), 0);
  // Non-blocking, so that joining can give up after the collective timeout
  // when a worker never arrives. NCCL_COMM_BLOCKING=1 overrides the config.
  if (const char* blocking = std::getenv("NCCL_COMM_BLOCKING"); blocking && std::string_view(blocking) == "1")
    std::fprintf(stderr,
                 "warning: NCCL_COMM_BLOCKING=1: joining the NCCL communicator on worker %d waits for every worker with no "
                 "timeout (the collective timeout, %d s, applies without it)\n",
                 cluster_->rank(), static_cast<int>(timeout_));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  api.check(api.ncclGroupStart(), "ncclGroupStart");
  for (int i = 0; i < local; ++i) {
    Gpu& g = gpus_[static_cast<size_t>(i)];
    g.rank = offset + i;
    DeviceGuard guard(g.index);
    const ncclResult_t joined = api.ncclCommInitRankConfig(&g.comm, ranks_, id, g.rank, &config);
    if (joined != ncclSuccess && joined != ncclInProgress) {
      api.ncclGroupEnd();  // a group left open would queue this thread's later NCCL calls forever
      api.check(joined, "joining the NCCL communicator on " + describe(g));
    }
  }
  api.check(api.ncclGroupEnd(), "joining the NCCL communicator");
}

void NcclAllReduce::refuse_shared_gpus(int most) {
  // NCCL takes one rank per GPU ("Duplicate GPU detected"); workers on one
  // host naming the same GPU are refused here, naming both, instead.
  std::vector<double> mine(static_cast<size_t>(most), -1.0);
  for (size_t i = 0; i < gpus_.size(); ++i) {
    char bus[32] = {};
    STRATA_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, gpus_[i].index));
    // 52 bits of the bus id's hash: exact in a double.
    mine[i] = static_cast<double>(std::hash<std::string>{}(bus) & ((uint64_t{1} << 52) - 1));
  }
  const std::vector<double> all = cluster_->all_gather(mine);
  const std::vector<std::string> hosts = cluster_->hosts();
  std::map<std::pair<std::string, double>, int> first;  // (host, GPU) -> the first worker naming it
  for (int worker = 0; worker < cluster_->size(); ++worker)
    for (int i = 0; i < most; ++i) {
      const double gpu = all[static_cast<size_t>(worker * most + i)];
      if (gpu < 0) continue;
      const std::string& host = hosts[static_cast<size_t>(worker)];
      if (auto [it, fresh] = first.try_emplace({host, gpu}, worker); !fresh)
        throw bad_input("cross_device_ops 'nccl': workers " + std::to_string(it->second) + " and " + std::to_string(worker) +
                        " on " + host +
                        " use the same GPU, and NCCL takes one worker per GPU: give each worker its own GPU "
                        "(--devices), or choose cross_device_ops hierarchical_mpi");
    }
}

std::unique_lock<std::timed_mutex> NcclAllReduce::use(Gpu& gpu, cudaStream_t compute) const {
  std::unique_lock held(*gpu.calls);
  throw_if_failed();
  // Marked before the call, under the lock fail() takes before it looks: a
  // collective being captured is the graph's from the call on.
  if (compute && cuda::capturing(compute)) *gpu.captured = true;
  return held;
}

void NcclAllReduce::check(ncclResult_t result, Gpu& gpu, std::unique_lock<std::timed_mutex>& held, const char* call) {
  if (result == ncclSuccess) return;
  if (result == ncclInProgress) return settle(gpu, held, call);  // non-blocking (multi-worker) communicators
  // The message is built only here: the calls run for every bucket.
  const std::string msg = lib().error(result, std::string(call) + " on " + describe(gpu), gpu.comm);
  held.unlock();
  fail(msg);
  throw runtime_error(msg);
}

void NcclAllReduce::settle(Gpu& gpu, std::unique_lock<std::timed_mutex>& held, const char* call) {
  const double start = monotonic_seconds(), deadline = start + timeout_;
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (const ncclResult_t asked = lib().ncclCommGetAsyncError(gpu.comm, &state); asked != ncclSuccess) state = asked;
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) return check(state, gpu, held, call);
    if (monotonic_seconds() > deadline) {
      const std::string msg = std::string(call) + " on " + describe(gpu) + ": no progress within " +
                              std::to_string(static_cast<int>(timeout_)) + " s; a worker has died or hangs";
      held.unlock();
      fail(msg);
      throw runtime_error(msg);
    }
    // Let the watchdog ask between polls. A queued collective settles in
    // microseconds: poll at once for the first millisecond, then back off
    // (a peer still joining, or gone).
    held.unlock();
    if (monotonic_seconds() - start < 1e-3) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
    held.lock();
    throw_if_failed();  // the watchdog aborted the communicator meanwhile
  }
}

std::string NcclAllReduce::describe(const Gpu& gpu) const {
  std::string s = "gpu:" + std::to_string(gpu.index) + " (NCCL rank " + std::to_string(gpu.rank) + " of " +
                  std::to_string(ranks_);
  if (cluster_ && cluster_->size() > 1) s += ", worker " + std::to_string(cluster_->rank()) + " on " + cluster_->host();
  return s + ")";
}

void NcclAllReduce::watch() {
  const auto& api = lib();
  // A new thread's current device is gpu:0, and its first CUDA call would
  // give that GPU a context (and its memory) in a run that does not use it.
  if (CudaBackend::set_thread_device(gpus_.front().index) != cudaSuccess) cudaGetLastError();
  std::unique_lock lock(mutex_);
  while (!stop_cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return stop_; })) {
    if (!error_.empty()) continue;
    std::string failure;
    for (Gpu& g : gpus_) {
      // A communicator busy on a replica's thread is asked next time round
      // (that thread reports its errors itself).
      if (std::unique_lock held(*g.calls, std::try_to_lock); held.owns_lock()) {
        ncclResult_t state = ncclSuccess;
        api.ncclCommGetAsyncError(g.comm, &state);
        if (state != ncclSuccess && state != ncclInProgress) {
          failure = api.error(state, "NCCL failed on " + describe(g), g.comm);
          break;
        }
      }
      // The finished ones leave the queue; the oldest unfinished one is timed.
      while (!g.pending.empty()) {
        const Gpu::Pending p = g.pending.front();
        const cudaError_t q = cudaEventQuery(p.event);
        if (q == cudaErrorNotReady) {
          if (monotonic_seconds() - p.since > timeout_)
            failure = "an NCCL all-reduce on " + describe(g) + " did not complete within " +
                      std::to_string(static_cast<int>(timeout_)) + " s: a peer has died or hangs";
          break;
        }
        // Another error is the GPU's, which the step's synchronisation reports.
        if (q != cudaSuccess) cudaGetLastError();
        g.spare.push_back(p.event);
        g.pending.pop_front();
      }
      if (!failure.empty()) break;
    }
    if (failure.empty()) continue;
    lock.unlock();
    try {
      fail(failure);
    } catch (...) {
      // The error is recorded before anything here can throw, and the
      // replicas' next call throws it: an exception leaving this thread would
      // end the process unexplained.
    }
    lock.lock();
  }
}

void NcclAllReduce::fail(const std::string& message) {
  {
    std::lock_guard lock(mutex_);
    if (!error_.empty()) return;
    error_ = message;
  }
  // Aborting ends the communicators' kernels, so the streams (and a host
  // waiting on them) move on. It frees them: the replicas' next NCCL call
  // throws the error instead (throw_if_failed), and the destructor leaves
  // them alone (those a step graph holds it ends, after the graph).
  aborted_ = true;
  for (Gpu& g : gpus_) {
    if (!g.comm) continue;
    // Waits for a call in progress on the communicator to return, but not
    // for ever: one stuck inside NCCL (a peer gone) is what the abort frees.
    std::unique_lock held(*g.calls, std::defer_lock);
    (void)held.try_lock_for(std::chrono::seconds(2));
    if (*g.captured) continue;  // see Gpu::captured (set by use(), under this lock)
    lib().ncclCommAbort(g.comm);
    g.comm_ended = true;
  }
  // The job is not ended here. This runs on the watchdog's or a replica's
  // thread, and MPI was started for one thread at a time
  // (MPI_THREAD_SERIALIZED): an MPI_Abort here could overlap the trainer
  // thread's own MPI calls. The abort lets the stuck kernels end; the
  // trainer then throws the error (throw_if_failed after the step), reports
  // it and ends the job (strata-run calls Cluster::abort).
}

void NcclAllReduce::abandon(int replica, const std::string& why) {
  if (!initialized_ || aborted_) return;
  fail("replica " + std::to_string(replica) + " failed (" + why + "); its peers' NCCL collectives were aborted");
}

void NcclAllReduce::throw_if_failed() const {
  if (!aborted_) return;
  std::lock_guard lock(mutex_);
  if (!error_.empty()) throw runtime_error(error_);
}

}  // namespace strata
