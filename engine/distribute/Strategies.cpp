#include "distribute/Strategies.h"

#include <algorithm>

#include "core/Error.h"

namespace strata {

std::vector<std::string> strategy_names() {
  return {"one_device", "mirrored", "central_storage", "multi_worker_mirrored", "parameter_server"};
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& options) {
  if (name == "one_device") {
    if (options.devices.size() > 1)
      throw bad_input("one_device: takes exactly one device, got " + std::to_string(options.devices.size()) +
                      "; for a replica on each, choose mirrored (strata-run --strategy mirrored)");
    return std::make_unique<OneDeviceStrategy>(options.devices.empty() ? Device{} : options.devices.front(), options);
  }
  if (name == "mirrored") return std::make_unique<MirroredStrategy>(options.devices, options);
  if (name == "central_storage") return std::make_unique<CentralStorageStrategy>(options.devices, options);
  if (name == "multi_worker_mirrored") {
    auto cluster = mpi_cluster(options.collective_timeout);
    // Every worker must bring the same number of replicas, or the global
    // batch split and the replica numbering would disagree between them.
    const auto counts = cluster->all_gather({static_cast<double>(std::max<size_t>(1, options.devices.size()))});
    for (size_t w = 0; w < counts.size(); ++w)
      if (counts[w] != counts[0])
        throw bad_input("multi_worker_mirrored: rank " + std::to_string(w) + " has " + std::to_string(int(counts[w])) +
                        " replica devices, rank 0 has " + std::to_string(int(counts[0])) + "; give every worker the same --devices count");
    return std::make_unique<MultiWorkerMirroredStrategy>(options.devices, options, cluster);
  }
  if (name == "parameter_server") {
    // Under mpirun with several ranks: servers and workers are processes.
    if (launched_by_mpi()) {
      auto cluster = mpi_cluster(options.collective_timeout);
      if (cluster->size() > 1) return std::make_unique<ParameterServerStrategy>(options.devices, options, cluster);
    }
    return std::make_unique<ParameterServerStrategy>(options.devices, options);
  }
  std::string all;
  for (auto& n : strategy_names()) all += (all.empty() ? "" : ", ") + n;
  throw bad_input("strategy '" + name + "' does not exist (choose one of " + all + ")");
}

}  // namespace strata
