#include "distribute/CentralStorageStrategy.h"

#include "core/Error.h"
#include "distribute/collectives/CrossDeviceOps.h"
#include "distribute/collectives/ReduceToOneDevice.h"

namespace strata {

namespace {
// Every replica reads the one copy of the variables on the first device, and
// the reduction sums where the gradients lie: each device must address the
// others' memory.
std::vector<Device> reaching_each_other(std::vector<Device> devices) {
  if (std::string why; !devices_reach_each_other(devices, "central_storage", &why)) throw bad_input(why);
  return devices;
}
}  // namespace

CentralStorageStrategy::CentralStorageStrategy(std::vector<Device> devices, const StrategyOptions& options)
    : Strategy(reaching_each_other(validate_devices(devices.empty() ? default_cpu_replicas() : devices, "central_storage")),
               options, std::make_unique<ReduceToOneDevice>(), true, 1) {}

}  // namespace strata
