#include "train/DeviceStatsSampler.h"

#include <algorithm>

namespace strata {

DeviceStatsSampler::DeviceStatsSampler(const std::vector<Device>& devices, double interval_seconds)
    : interval_(interval_seconds) {
  for (const Device& d : devices)
    if (d.kind == DeviceKind::Gpu && std::find(gpus_.begin(), gpus_.end(), d) == gpus_.end()) gpus_.push_back(d);
  // The first reading loads and starts NVML (a library load and a driver
  // query, up to seconds on a machine with many GPUs): done here, while the
  // run is set up, so it does not stall the first step that samples.
  if (!gpus_.empty()) {
    DeviceUsage ignored;
    gpu_usage(gpus_.front().index, ignored);
  }
}

std::optional<DeviceStatsEvent> DeviceStatsSampler::sample(double now) {
  if (gpus_.empty() || now - last_ < interval_) return std::nullopt;
  last_ = now;
  DeviceStatsEvent e;
  e.time = now;
  for (const Device& d : gpus_) {
    DeviceStat s;
    s.device = d.str();
    DeviceUsage u;
    if (gpu_usage(d.index, u)) {
      s.utilization = u.utilization;
      s.memory_used = u.memory_used;
      s.memory_total = u.memory_total;
    }
    e.devices.push_back(std::move(s));
  }
  return e;
}

}  // namespace strata
