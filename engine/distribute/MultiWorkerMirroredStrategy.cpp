#include "distribute/MultiWorkerMirroredStrategy.h"

#include <utility>

#include "distribute/collectives/CrossDeviceOps.h"

namespace strata {

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(std::vector<Device> devices, const StrategyOptions& options,
                                                         std::shared_ptr<Cluster> cluster)
    : MultiWorkerMirroredStrategy(Checked{validate_devices(devices.empty() ? std::vector<Device>{Device{}} : devices,
                                                           "multi_worker_mirrored")},
                                  options, std::move(cluster)) {}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(Checked checked, const StrategyOptions& options,
                                                         std::shared_ptr<Cluster> cluster)
    : Strategy(checked.devices, options, select_cross_device_ops(checked.devices, options.cross_device_ops, cluster), false,
               static_cast<int>(checked.devices.size()), cluster) {}

}  // namespace strata
