#pragma once
#include <memory>

#include "distribute/Strategy.h"

namespace strata {

// Synchronous data parallelism over worker processes launched by mpirun:
// each worker has its local replica devices, gradients are reduced first
// within the process, then across workers (MPI), every step
// (tf.distribute.MultiWorkerMirroredStrategy).
class MultiWorkerMirroredStrategy final : public Strategy {
public:
  MultiWorkerMirroredStrategy(std::vector<Device> devices, const StrategyOptions& options, std::shared_ptr<Cluster> cluster);
  std::string name() const override { return "multi_worker_mirrored"; }

private:
  // Devices validate_devices accepted: the cross-device ops are chosen for
  // them after the check (a constructor's arguments have no set order).
  struct Checked {
    std::vector<Device> devices;
  };
  MultiWorkerMirroredStrategy(Checked checked, const StrategyOptions& options, std::shared_ptr<Cluster> cluster);
};

}  // namespace strata
