#pragma once
#include "distribute/collectives/CrossDeviceOps.h"

namespace strata {

// Accelerator replicas of one process (sim devices; GPUs with peer access):
// the reduce-scatter and all-gather of InProcessAllReduce, done by the
// devices' own streams on device memory. Host threads only meet at barriers
// to swap buffer addresses and events; each stream waits for the others'
// events before it reads their buffers, so the host never waits for a device.
// Chunk sums run in replica order, as on the host, so every replica gets the
// same bits. NCCL takes over for distinct GPUs when it is built.
class DeviceAllReduce final : public CrossDeviceOps {
public:
  std::string name() const override { return "device_local"; }
  int priority() const override { return 90; }
  bool enabled(const std::vector<Device>& devices, std::string* why_not) const override;
  void all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) override;
  // The sharded update's halves, in the streams likewise. Neither ends on a
  // barrier or a wait: each half's events order the other's reads (see the .cpp).
  bool supports_sharding(const std::vector<Device>& /*devices*/, std::string* /*why_not*/) const override { return true; }
  void reduce_scatter_sum(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                          const UpdateShards& shards) override;
  void all_gather(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                  const UpdateShards& shards) override;
};

}  // namespace strata
