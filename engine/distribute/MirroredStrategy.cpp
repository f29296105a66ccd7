#include "distribute/MirroredStrategy.h"

#include "distribute/collectives/CrossDeviceOps.h"

namespace strata {

namespace {
std::vector<Device> parse_all(std::initializer_list<const char*> names) {
  std::vector<Device> d;
  for (auto* n : names) d.push_back(Device::parse(n));
  return d;
}
}  // namespace

MirroredStrategy::MirroredStrategy(std::vector<Device> devices, const StrategyOptions& options)
    : MirroredStrategy(Checked{validate_devices(devices.empty() ? default_cpu_replicas() : devices, "mirrored")}, options) {}

MirroredStrategy::MirroredStrategy(Checked checked, const StrategyOptions& options)
    : Strategy(checked.devices, options, select_cross_device_ops(checked.devices, options.cross_device_ops), false,
               static_cast<int>(checked.devices.size())) {}

MirroredStrategy::MirroredStrategy(std::initializer_list<const char*> devices, const StrategyOptions& options)
    : MirroredStrategy(parse_all(devices), options) {}

}  // namespace strata
