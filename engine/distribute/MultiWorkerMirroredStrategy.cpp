#include "distribute/MultiWorkerMirroredStrategy.h"

#include "distribute/collectives/CrossDeviceOps.h"

namespace strata {

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(std::vector<Device> devices, const StrategyOptions& options,
                                                         std::shared_ptr<Cluster> cluster)
    : Strategy(validate_devices(devices.empty() ? std::vector<Device>{Device{}} : devices, "multi_worker_mirrored"), options,
               select_cross_device_ops(devices.empty() ? std::vector<Device>{Device{}} : devices, options.cross_device_ops,
                                       cluster),
               false, static_cast<int>(devices.empty() ? 1 : devices.size()), cluster) {}

}  // namespace strata
