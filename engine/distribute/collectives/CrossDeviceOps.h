#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/Device.h"
#include "core/DeviceMemory.h"
#include "core/UpdateShards.h"
#include "distribute/collectives/Barrier.h"

namespace strata {

// A buffer in a device's memory: host code passes it on, never reads it.
struct DeviceSpan {
  Device device;
  float* data = nullptr;
  size_t size = 0;
  size_t bytes() const { return size * sizeof(float); }
};

// Shared state of the replicas of one process taking part in a collective:
// each replica publishes its buffer, then all meet at the barrier. On devices
// with streams they also publish events: a replica's stream waits for the
// others' work before it reads their buffers, without the host waiting. One
// array per phase of a collective, so no replica overwrites an event another
// may still be reading.
struct ReplicaGroup {
  explicit ReplicaGroup(std::vector<Device> replica_devices)
      : ReplicaGroup(static_cast<int>(replica_devices.size())) {
    devices = std::move(replica_devices);
  }
  explicit ReplicaGroup(int n)
      : size(n),
        barrier(n),
        devices(static_cast<size_t>(n)),
        buffers(static_cast<size_t>(n)),
        ready(static_cast<size_t>(n)),
        reduced(static_cast<size_t>(n)),
        done(static_cast<size_t>(n)),
        barrier_events{std::vector<EventPtr>(static_cast<size_t>(n)), std::vector<EventPtr>(static_cast<size_t>(n))},
        scattered(static_cast<size_t>(n)),
        gathered(static_cast<size_t>(n)),
        scatter_ready(static_cast<size_t>(n)),
        updated(static_cast<size_t>(n)) {}
  int size;
  Barrier barrier;
  std::vector<Device> devices;  // each replica's
  std::vector<float*> buffers;
  std::vector<EventPtr> ready, reduced, done;
  std::vector<EventPtr> barrier_events[2];  // alternate barriers use alternate arrays
  // The sharded update's tensor lists and stream events, one array per half,
  // so a replica that runs ahead into the gather never overwrites what
  // another still reads.
  std::vector<const std::vector<DeviceSpan>*> scattered, gathered;
  std::vector<EventPtr> scatter_ready, updated;
};

// *How* replicas combine a buffer (the *what* - which gradients, packed into
// which buckets - is ReplicaContext's). Every replica of the group calls
// all_reduce_sum with its own buffer of equal length; on return each buffer
// holds the element-wise sum, bit-identical on every replica.
class CrossDeviceOps {
public:
  virtual ~CrossDeviceOps() = default;
  virtual std::string name() const = 0;
  // Higher wins when several are enabled for the same devices.
  virtual int priority() const = 0;
  // Whether this implementation can serve these replica devices, and if not why.
  virtual bool enabled(const std::vector<Device>& devices, std::string* why_not) const = 0;
  virtual void all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) = 0;
  // The same sum, started: the buffer holds it once wait_all() has returned
  // (in the replica's stream order). Implementations that communicate on a
  // stream of their own (NCCL) start the collective there so it overlaps the
  // replica's computation; the others complete it at once. Every replica
  // starts the same collectives in the same order.
  virtual void start_all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) {
    all_reduce_sum(group, replica, buffer);
  }
  // Makes the replica's later work wait for every collective it started.
  virtual void wait_all(ReplicaGroup& /*group*/, int /*replica*/) {}
  // How long a collective may wait for the other replicas before it is
  // failed (the project's strategy.collective_timeout); for implementations
  // that can give up on a stuck collective (NCCL's watchdog).
  virtual void set_timeout(double /*seconds*/) {}
  // Throws a failure seen outside the calls (NCCL's watchdog aborting a
  // collective past its timeout lets the step's kernels end): a step whose
  // collectives were aborted must be neither recorded nor checkpointed.
  virtual void throw_if_failed() const {}
  // A replica's step threw (`why`): peers that wait for it where the host
  // barrier cannot wake them (inside an NCCL call, or its kernels) are
  // released; the collectives fail from here on. Called on the failing
  // replica's thread.
  virtual void abandon(int /*replica*/, const std::string& /*why*/) {}
  // Whether this implementation is chosen by "auto" for these devices when
  // enabled (NCCL only for two or more GPUs: on one GPU the device-memory
  // reduce is cheaper, though NCCL can be named).
  virtual bool preferred(const std::vector<Device>& /*devices*/) const { return true; }

  // Whether started collectives run beside the replicas' computation (NCCL's
  // own stream): then an all-reduce in buckets during the backward pass
  // hides communication, which "auto" prefers to the sharded update.
  virtual bool overlaps_compute() const { return false; }

  // The sharded update (ZeRO-1) in two halves, for implementations that
  // support it for these devices (else why not). Every replica passes its
  // own tensors (the same sizes in the same order on every replica) and the
  // same shards.
  virtual bool supports_sharding(const std::vector<Device>& /*devices*/, std::string* why_not) const {
    if (why_not) *why_not = "cross-device ops '" + name() + "' cannot reduce-scatter and all-gather";
    return false;
  }
  // On return this replica's tensors hold the sum over all replicas on the
  // pieces of its own shard; elsewhere they are left as they were.
  virtual void reduce_scatter_sum(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                                  const UpdateShards& shards);
  // Call once every replica has written its shard of its tensors: on return
  // this replica's tensors hold every other replica's shard as it wrote it.
  virtual void all_gather(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                          const UpdateShards& shards);
};

// True when every device is a host (cpu) device; else says which is not.
bool host_devices_only(const std::vector<Device>& devices, const std::string& who, std::string* why_not);
// True when no device is a host device and all are of one kind; else says why.
bool accelerators_of_one_kind(const std::vector<Device>& devices, const std::string& who, std::string* why_not);
// True when a kernel on each device can address every other's memory (see
// direct_access); else names the first pair that cannot.
bool devices_reach_each_other(const std::vector<Device>& devices, const std::string& who, std::string* why_not);

class Cluster;

// Every implementation this build has, best first: those that reduce across
// the processes of `cluster` when one is given (multi-worker strategies),
// else those within one process.
std::vector<std::unique_ptr<CrossDeviceOps>> all_cross_device_ops(const std::shared_ptr<Cluster>& cluster = nullptr);
// The highest-priority enabled implementation, or the one named ("auto" =
// choose). A named one that is not enabled is a bad_input error saying why.
std::unique_ptr<CrossDeviceOps> select_cross_device_ops(const std::vector<Device>& devices, const std::string& name = "auto",
                                                        const std::shared_ptr<Cluster>& cluster = nullptr);

}  // namespace strata
