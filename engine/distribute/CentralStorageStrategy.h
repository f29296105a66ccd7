#pragma once
#include "distribute/Strategy.h"

namespace strata {

// Variables stay in one place (the host); replicas compute gradients that are
// gathered there, applied once, and read by all
// (tf.distribute.experimental.CentralStorageStrategy).
class CentralStorageStrategy final : public Strategy {
public:
  explicit CentralStorageStrategy(std::vector<Device> devices = {}, const StrategyOptions& options = {});
  std::string name() const override { return "central_storage"; }
};

}  // namespace strata
