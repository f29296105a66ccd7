#pragma once
// Live load of a run's GPUs for the dashboard and the JSONL stream: at most
// one device_stats event per interval, read between steps through NVML
// (core's gpu_usage, provided by the CUDA backend when the driver has it).
// Runs on CPU replicas or sim devices emit none: there is nothing to read.
#include <optional>
#include <vector>

#include "core/Device.h"
#include "train/Events.h"

namespace strata {

class DeviceStatsSampler {
public:
  explicit DeviceStatsSampler(const std::vector<Device>& devices, double interval_seconds = 1.0);
  // The event to emit at `now` (seconds since the run started), if one is due.
  std::optional<DeviceStatsEvent> sample(double now);

private:
  std::vector<Device> gpus_;  // distinct GPUs among the replica devices
  double interval_, last_ = -1e300;
};

}  // namespace strata
