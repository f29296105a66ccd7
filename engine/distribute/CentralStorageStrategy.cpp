#include "distribute/CentralStorageStrategy.h"

#include "distribute/collectives/ReduceToOneDevice.h"

namespace strata {

CentralStorageStrategy::CentralStorageStrategy(std::vector<Device> devices, const StrategyOptions& options)
    : Strategy(validate_devices(devices.empty() ? default_cpu_replicas() : devices, "central_storage"), options,
               std::make_unique<ReduceToOneDevice>(), true, 1) {}

}  // namespace strata
