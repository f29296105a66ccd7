#include "distribute/parameter_server/ParameterServerStrategy.h"

#include "core/Error.h"
#include "distribute/collectives/ReduceToOneDevice.h"

namespace strata {

namespace {
std::vector<Device> default_workers(std::vector<Device> devices) {
  if (!devices.empty()) return devices;
  const int n = hardware_threads() >= 2 ? 2 : 1;
  for (int i = 0; i < n; ++i) devices.push_back(Device{DeviceKind::Cpu, i});
  return devices;
}

const ParameterServerOptions& checked(const ParameterServerOptions& o) {
  if (o.servers < 1) throw bad_input("parameter_server: needs at least one parameter server, got " + std::to_string(o.servers));
  if (o.staleness && *o.staleness < 0)
    throw bad_input("parameter_server: the staleness bound must be 0 (synchronous) or more, or unbounded; got " +
                    std::to_string(*o.staleness));
  return o;
}
}  // namespace

// Workers never all-reduce (evaluation runs each replica on its own data),
// so the cross-device ops only serve Strategy::reduce-style helpers.
ParameterServerStrategy::ParameterServerStrategy(std::vector<Device> workers, const StrategyOptions& options,
                                                 std::shared_ptr<Cluster> cluster)
    : Strategy(validate_devices(cluster ? (workers.empty() ? std::vector<Device>{Device{}} : workers) : default_workers(workers),
                                "parameter_server"),
               options, std::make_unique<ReduceToOneDevice>(), false,
               cluster ? 1 : static_cast<int>(default_workers(workers).size()), cluster),
      options_(checked(options.parameter_server)) {
  if (!multi_process()) return;
  if (num_local_replicas() != 1)
    throw bad_input("parameter_server: across processes each worker rank is one worker on one device; --devices names " +
                    std::to_string(num_local_replicas()));
  if (cluster->size() - options_.servers < 1)
    throw bad_input("parameter_server: " + std::to_string(cluster->size()) + " ranks with " + std::to_string(options_.servers) +
                    " servers leave no worker; start more ranks (mpirun -np SERVERS+WORKERS)");
}

ParameterServerStrategy::~ParameterServerStrategy() = default;

void ParameterServerStrategy::place(const std::vector<Variable*>& vars, nn::Optimizer& optimizer) {
  for (auto* v : vars)
    if (v->num_components() != num_local_replicas())
      throw runtime_error("parameter_server: variable " + v->name() + " was not created in the strategy's scope()");
  store_ = std::make_unique<LocalParameterStore>(vars, ShardPlan::make(vars, options_.servers, options_.min_shard_bytes),
                                                 optimizer);
}

LocalParameterStore& ParameterServerStrategy::store() {
  if (!store_) throw runtime_error("parameter_server: place() the model's variables before training");
  return *store_;
}

}  // namespace strata
