#pragma once
#include <memory>

#include "distribute/Cluster.h"
#include "distribute/collectives/CrossDeviceOps.h"

namespace strata {

// Hierarchical all-reduce for multi-worker runs: the replicas of a process
// reduce among themselves first (reduce-scatter over shared memory), replica
// 0 then reduces the process's sum with the other workers over the cluster
// transport (MPI), and the result is copied back to the local replicas. One
// message per worker per bucket crosses the network, whatever the number of
// local replicas.
class MultiWorkerAllReduce final : public CrossDeviceOps {
public:
  explicit MultiWorkerAllReduce(std::shared_ptr<Cluster> cluster) : cluster_(std::move(cluster)) {}
  std::string name() const override { return "hierarchical_" + cluster_->transport(); }
  int priority() const override { return 200; }
  bool enabled(const std::vector<Device>& devices, std::string* why_not) const override;
  void all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) override;

private:
  void reduce_host(ReplicaGroup& group, int replica, std::span<float> buffer);

  std::shared_ptr<Cluster> cluster_;
};

}  // namespace strata
