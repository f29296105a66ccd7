#pragma once
#include "distribute/collectives/CrossDeviceOps.h"

namespace strata {

// The fallback for any devices that can address each other's memory: replica 0 sums everything (in
// replica order), then every replica copies the result; on devices with
// streams the sums and copies run there, ordered by events. Also what
// CentralStorage uses: gather to the storage device, then broadcast.
class ReduceToOneDevice final : public CrossDeviceOps {
public:
  std::string name() const override { return "reduce_to_one_device"; }
  int priority() const override { return 0; }
  // Replica 0's stream reads every buffer where it lies.
  bool enabled(const std::vector<Device>& devices, std::string* why_not) const override {
    return devices_reach_each_other(devices, "reduce_to_one_device", why_not);
  }
  void all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) override;
};

}  // namespace strata
