#include "distribute/OneDeviceStrategy.h"

#include "distribute/collectives/ReduceToOneDevice.h"

namespace strata {

OneDeviceStrategy::OneDeviceStrategy(Device device, const StrategyOptions& options)
    : Strategy(validate_devices({device}, "one_device"), options, std::make_unique<ReduceToOneDevice>(), false, 1) {}

}  // namespace strata
