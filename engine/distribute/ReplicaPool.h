#pragma once
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/CpuBackend.h"
#include "distribute/ReplicaContext.h"
#include "distribute/collectives/CrossDeviceOps.h"

namespace strata {

// One long-lived thread per replica but the first, whose work the calling
// thread does itself, each replica with its own CPU backend holding its
// share of the cores. run() executes fn on every replica and returns when
// all are done; if one throws, the group's barrier is aborted so no replica
// hangs in a collective, and the first real error is rethrown.
//
// A sleeping thread's wake-up costs tens of microseconds (more on a virtual
// machine, whose idle CPU halts) on the critical path of every step, so the
// caller takes replica 0: one hand-off fewer, and none with one replica.
// The hand-offs between steps (the next step's start, the last replica's
// end) spin ~100 us before sleeping, as the collectives' barrier does. That
// costs nothing since replicas taking every core gather their own rows (no
// input thread wants a core between steps; it once did, and spinning was
// then slower); measured on 2 cores, mirrored x2: context switches per run
// 4,000 -> 1,600-3,100.
class ReplicaPool {
public:
  ReplicaPool(std::vector<Device> devices, int threads_per_replica, std::unique_ptr<CrossDeviceOps> ops,
              bool variables_shared, size_t fusion_bytes, int replica_offset = 0, int total_replicas = 0,
              bool sharded_update = false);
  ~ReplicaPool();
  ReplicaPool(const ReplicaPool&) = delete;
  ReplicaPool& operator=(const ReplicaPool&) = delete;

  int size() const { return static_cast<int>(devices_.size()); }
  const std::vector<Device>& devices() const { return devices_; }
  const CrossDeviceOps& cross_device_ops() const { return *ops_; }
  const ReplicaContext& context(int replica) const { return *contexts_[static_cast<size_t>(replica)]; }
  void run(const std::function<void(ReplicaContext&)>& fn);

private:
  // With one shared copy of the variables (central storage) replicas on other
  // devices read it from the storage device's memory, which the host may
  // have written through that device's stream (initial values, a restored
  // checkpoint). Each stream waits for every other's work so far, before and
  // after a run, so no replica reads a value its device has not seen written.
  void fence_devices();

  void loop(int replica);
  // Runs the job on `replica` from this thread; false if it threw.
  void run_replica(int replica, const std::function<void(ReplicaContext&)>& job);
  void finished_one();
  static std::string message_of(const std::exception_ptr& e);

  std::vector<Device> devices_;
  std::unique_ptr<CrossDeviceOps> ops_;
  ReplicaGroup group_;
  std::vector<std::unique_ptr<CpuBackend>> backends_;
  std::vector<std::unique_ptr<ReplicaContext>> contexts_;
  std::vector<std::thread> threads_;

  std::mutex mutex_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(ReplicaContext&)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
  bool variables_shared_;
  std::vector<std::exception_ptr> errors_;
  // In the order the replicas failed: the first is the cause, the others
  // mostly its consequences (woken from a barrier, a collective aborted).
  std::vector<int> failed_order_;
  std::atomic<int> failures_{0};
};

}  // namespace strata
