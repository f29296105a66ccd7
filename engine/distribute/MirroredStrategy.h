#pragma once
#include <initializer_list>

#include "distribute/Strategy.h"

namespace strata {

// A replica per device, a copy of every variable on each, gradients
// all-reduced every step (tf.distribute.MirroredStrategy).
class MirroredStrategy final : public Strategy {
public:
  // No devices: a CPU replica per core, up to 8 (default_cpu_replicas).
  explicit MirroredStrategy(std::vector<Device> devices = {}, const StrategyOptions& options = {});
  MirroredStrategy(std::initializer_list<const char*> devices, const StrategyOptions& options = {});
  std::string name() const override { return "mirrored"; }

private:
  // Devices validate_devices accepted: the cross-device ops are chosen for
  // them after the check (a constructor's arguments have no set order).
  struct Checked {
    std::vector<Device> devices;
  };
  MirroredStrategy(Checked checked, const StrategyOptions& options);
};

}  // namespace strata
