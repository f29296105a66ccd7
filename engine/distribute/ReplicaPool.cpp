#include "distribute/ReplicaPool.h"

#include "core/Denormals.h"
#include "core/Error.h"
#include "core/SpinWait.h"
#include "nn/Variable.h"

namespace strata {

ReplicaPool::ReplicaPool(std::vector<Device> devices, int threads_per_replica, std::unique_ptr<CrossDeviceOps> ops,
                         bool variables_shared, size_t fusion_bytes, int replica_offset, int total_replicas,
                         bool sharded_update)
    : devices_(std::move(devices)), ops_(std::move(ops)), group_(devices_), variables_shared_(variables_shared) {
  const int n = size();
  errors_.resize(static_cast<size_t>(n));
  failed_order_.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    // Host replicas compute on their own share of cores; other devices'
    // backends are the devices' own (the replica thread only queues work).
    const Device& d = devices_[static_cast<size_t>(r)];
    backends_.push_back(d.is_host() ? std::make_unique<CpuBackend>(threads_per_replica, d.index) : nullptr);
    contexts_.push_back(std::make_unique<ReplicaContext>(r, group_, *ops_, variables_shared, fusion_bytes,
                                                         devices_[static_cast<size_t>(r)], replica_offset, total_replicas,
                                                         sharded_update));
  }
  for (int r = 1; r < n; ++r) threads_.emplace_back([this, r] { loop(r); });
}

ReplicaPool::~ReplicaPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.join();
  // The cross-device ops go first: NCCL's collectives may still read the
  // replicas' buckets (a step that failed midway), and aborting or
  // destroying its communicators settles them before the buckets are freed.
  ops_.reset();
}

void ReplicaPool::loop(int replica) {
  enable_flush_denormals();
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(ReplicaContext&)>* job;
    spin_while([&] { return generation_.load(std::memory_order_acquire) == seen; });
    {
      std::unique_lock lock(mutex_);
      start_cv_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen; });
      if (stop_) return;
      seen = generation_.load(std::memory_order_relaxed);
      job = job_;
    }
    run_replica(replica, *job);
    finished_one();
  }
}

void ReplicaPool::run_replica(int replica, const std::function<void(ReplicaContext&)>& job) {
  ScopedCpuBackend backend(backends_[static_cast<size_t>(replica)].get());
  CurrentReplicaScope current(replica);
  ReplicaSync::Scope sync(contexts_[static_cast<size_t>(replica)].get());
  try {
    job(*contexts_[static_cast<size_t>(replica)]);
  } catch (...) {
    const auto r = static_cast<size_t>(replica);
    contexts_[r]->abandon_step();
    errors_[r] = std::current_exception();
    failed_order_[r] = failures_.fetch_add(1, std::memory_order_relaxed);
    group_.barrier.abort();  // wake replicas waiting for us in a collective
    ops_->abandon(replica, message_of(errors_[r]));
  }
}

std::string ReplicaPool::message_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an unknown exception";
  }
}

void ReplicaPool::finished_one() {
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::lock_guard lock(mutex_);
  done_cv_.notify_all();
}

void ReplicaPool::fence_devices() {
  if (!variables_shared_ || size() < 2) return;
  std::vector<EventPtr> events;
  for (auto& d : devices_) events.push_back(backend_for(d).record_event());
  for (size_t i = 0; i < devices_.size(); ++i)
    for (size_t j = 0; j < devices_.size(); ++j)
      if (i != j) backend_for(devices_[i]).wait_event(events[j]);
}

void ReplicaPool::run(const std::function<void(ReplicaContext&)>& fn) {
  fence_devices();
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    pending_.store(size(), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();
  enable_flush_denormals();  // as on the replica threads
  run_replica(0, fn);
  finished_one();
  spin_while([&] { return pending_.load(std::memory_order_acquire) != 0; });
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  job_ = nullptr;
  lock.unlock();
  fence_devices();
  // Prefer the error that caused the abort over the Aborted it triggered,
  // and the first to fail over those that followed it.
  std::exception_ptr first, aborted;
  int first_at = size(), aborted_at = size();
  for (size_t r = 0; r < errors_.size(); ++r) {
    if (!errors_[r]) continue;
    bool is_aborted = false;
    try {
      std::rethrow_exception(errors_[r]);
    } catch (const Error& err) {
      is_aborted = err.kind() == ErrorKind::Aborted;
    } catch (...) {
    }
    std::exception_ptr& pick = is_aborted ? aborted : first;
    int& pick_at = is_aborted ? aborted_at : first_at;
    if (failed_order_[r] < pick_at) {
      pick = errors_[r];
      pick_at = failed_order_[r];
    }
  }
  for (auto& e : errors_) e = nullptr;
  failures_.store(0, std::memory_order_relaxed);
  if (first || aborted) {
    group_.barrier.reset();
    std::rethrow_exception(first ? first : aborted);
  }
}

}  // namespace strata
