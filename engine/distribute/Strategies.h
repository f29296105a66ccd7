#pragma once
// The concrete strategies. Each is a few lines: what varies is where
// variables live and how gradients are combined.
#include <memory>
#include <string>

#include "distribute/Strategy.h"

namespace strata {

// One replica on one device, no collectives (tf.distribute.OneDeviceStrategy).
class OneDeviceStrategy final : public Strategy {
public:
  explicit OneDeviceStrategy(Device device = {}, const StrategyOptions& options = {});
  std::string name() const override { return "one_device"; }
};

// A replica per device, a copy of every variable on each, gradients
// all-reduced every step (tf.distribute.MirroredStrategy).
class MirroredStrategy final : public Strategy {
public:
  // No devices: two CPU replicas where the machine has two or more cores.
  explicit MirroredStrategy(std::vector<Device> devices = {}, const StrategyOptions& options = {});
  MirroredStrategy(std::initializer_list<const char*> devices, const StrategyOptions& options = {});
  std::string name() const override { return "mirrored"; }
};

// Variables stay in one place (the host); replicas compute gradients that are
// gathered there, applied once, and read by all
// (tf.distribute.experimental.CentralStorageStrategy).
class CentralStorageStrategy final : public Strategy {
public:
  explicit CentralStorageStrategy(std::vector<Device> devices = {}, const StrategyOptions& options = {});
  std::string name() const override { return "central_storage"; }
};

// Synchronous data parallelism over worker processes launched by mpirun:
// each worker has its local replica devices, gradients are reduced first
// within the process, then across workers (MPI), every step
// (tf.distribute.MultiWorkerMirroredStrategy).
class MultiWorkerMirroredStrategy final : public Strategy {
public:
  MultiWorkerMirroredStrategy(std::vector<Device> devices, const StrategyOptions& options, std::shared_ptr<Cluster> cluster);
  std::string name() const override { return "multi_worker_mirrored"; }
};

// Strategy names accepted by project files and --strategy.
std::vector<std::string> strategy_names();
// Builds a strategy by name; bad_input for an unknown name or bad devices.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& options);

}  // namespace strata
