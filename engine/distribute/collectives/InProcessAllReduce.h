#pragma once
#include "distribute/collectives/CrossDeviceOps.h"

namespace strata {

// Host replicas in one process: reduce-scatter then all-gather over shared
// memory. Replica r sums chunk r of every buffer (in replica order, so every
// run and every replica gets the same bits) into its own buffer, then each
// replica copies the other chunks from their owners. Every replica thread
// does 1/N of the adds: all cores work.
class InProcessAllReduce final : public CrossDeviceOps {
public:
  std::string name() const override { return "in_process"; }
  int priority() const override { return 100; }
  bool enabled(const std::vector<Device>& devices, std::string* why_not) const override;
  void all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) override;

  // The same two halves over the tensors where they lie (no packing): replica
  // r sums the pieces of shard r of every replica's tensors into its own,
  // and later copies the other shards from their owners.
  bool supports_sharding(const std::vector<Device>& /*devices*/, std::string* /*why_not*/) const override { return true; }
  void reduce_scatter_sum(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                          const UpdateShards& shards) override;
  void all_gather(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                  const UpdateShards& shards) override;
};

}  // namespace strata
