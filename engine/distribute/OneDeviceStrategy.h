#pragma once
#include "distribute/Strategy.h"

namespace strata {

// One replica on one device, no collectives (tf.distribute.OneDeviceStrategy).
class OneDeviceStrategy final : public Strategy {
public:
  explicit OneDeviceStrategy(Device device = {}, const StrategyOptions& options = {});
  std::string name() const override { return "one_device"; }
};

}  // namespace strata
