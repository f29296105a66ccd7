#include "distribute/Strategy.h"

#include <algorithm>
#include <set>

#include "backend/Backend.h"
#include "core/Error.h"

namespace strata {

int logical_cpu_device_count() { return std::max(hardware_threads(), 8); }

std::vector<Device> Strategy::default_cpu_replicas() {
  std::vector<Device> d;
  const int n = std::max(1, std::min(hardware_threads(), 8));
  for (int i = 0; i < n; ++i) d.push_back(Device{DeviceKind::Cpu, i});
  return d;
}

std::vector<Device> Strategy::validate_devices(std::vector<Device> devices, const std::string& strategy) {
  if (devices.empty()) throw bad_input(strategy + ": needs at least one device (zero replicas)");
  std::set<std::pair<int, int>> seen;
  for (auto& d : devices) {
    if (d.kind == DeviceKind::Gpu) {
      // Opening the GPU's backend is the check: it names the device and the
      // reason (no CUDA in this build, no driver, no such index).
      try {
        backend_for(d);
      } catch (const Error& e) {
        throw Error(e.kind(), strategy + ": " + e.what());
      }
    }
    if (d.kind == DeviceKind::Sim && d.index >= kSimDeviceCount)
      throw bad_input(strategy + ": device " + d.str() + " does not exist (simulated devices are sim:0 to sim:" +
                      std::to_string(kSimDeviceCount - 1) + ")");
    if (d.kind == DeviceKind::Cpu && d.index >= logical_cpu_device_count())
      throw bad_input(strategy + ": device " + d.str() + " does not exist (this machine has cpu:0 to cpu:" +
                      std::to_string(logical_cpu_device_count() - 1) + ")");
    // Several replicas may share an accelerator (gpu:0,gpu:0: each has its own
    // memory there and they reduce through it); a CPU device is a share of
    // the cores, so naming one twice is a mistake.
    if (d.kind == DeviceKind::Cpu && !seen.insert({static_cast<int>(d.kind), d.index}).second)
      throw bad_input(strategy + ": device " + d.str() + " is listed twice");
  }
  return devices;
}

namespace {
// Whether the optimizer update is sharded, from the option and what the
// strategy's replicas and cross-device ops allow.
bool use_sharded_update(const std::string& option, const CrossDeviceOps& ops, const std::vector<Device>& devices,
                        bool variables_shared, const Cluster& cluster) {
  if (option == "off") return false;
  if (option != "auto" && option != "on")
    throw bad_input("strategy.sharded_update: '" + option + "' is not one of auto, on, off");
  std::string why;
  if (variables_shared) why = "the replicas share one copy of the variables";
  else if (devices.size() < 2) why = "there is only one replica";
  else if (cluster.size() > 1) why = "it shards among one process's replicas, not across workers";
  else if (!ops.supports_sharding(devices, &why) && why.empty()) why = "cross-device ops '" + ops.name() + "' cannot shard";
  if (option == "on") {
    if (!why.empty()) throw bad_input("strategy.sharded_update: on is not possible here: " + why);
    return true;
  }
  // auto: not where the all-reduce can hide behind the backward pass instead.
  return why.empty() && !ops.overlaps_compute();
}
}  // namespace

Strategy::Strategy(std::vector<Device> devices, const StrategyOptions& options, std::unique_ptr<CrossDeviceOps> ops,
                   bool variables_shared, int variable_components, std::shared_ptr<Cluster> cluster)
    : cluster_(cluster ? std::move(cluster) : std::make_shared<SingleProcessCluster>()),
      variable_components_(variable_components) {
  // Workers on one host share its cores.
  const int total = options.threads > 0 ? options.threads : std::max(1, hardware_threads() / cluster_->local_size());
  const int n = static_cast<int>(devices.size());
  threads_per_replica_ = std::max(1, total / n);
  const bool sharded = use_sharded_update(options.sharded_update, *ops, devices, variables_shared, *cluster_);
  ops->set_timeout(options.collective_timeout);
  // Host replicas under the sharded update keep one copy of the variables:
  // each updates its shard of it in place, so the all-gather has nothing to
  // copy (a barrier remains), and the replicas' caches hold one copy of the
  // weights instead of N. Replicas on devices keep theirs: their streams
  // would need to order every read of the copy against the others' updates.
  if (sharded && std::all_of(devices.begin(), devices.end(), [](const Device& d) { return d.is_host(); }))
    variable_components_ = 1;
  pool_ = std::make_unique<ReplicaPool>(std::move(devices), threads_per_replica_, std::move(ops), variables_shared,
                                        options.fusion_bytes, cluster_->rank() * n, n * cluster_->size(), sharded);
}

StrategyScope Strategy::scope() const {
  const auto& local = devices();
  if (variable_components_ == static_cast<int>(local.size())) return StrategyScope(local);
  return StrategyScope({local.front()});
}

// The result is on the host: each replica's value is copied there first
// (one wait per device), as TF reduces to the host for values it returns.
Tensor Strategy::reduce(ReduceOp op, const PerReplica<Tensor>& on_devices, std::optional<int> axis) const {
  if (on_devices.num_replicas() == 0) throw runtime_error("reduce: no values");
  std::vector<Tensor> host;
  for (auto& v : on_devices) host.push_back(v.to(Device{}));
  const PerReplica<Tensor> values(std::move(host));
  if (!axis) {
    const Shape shape = values[0].shape();
    Tensor out = Tensor::zeros(shape);
    for (auto& v : values) {
      if (v.shape() != shape) throw runtime_error("reduce: replica values differ in shape: " + v.shape().str() + " vs " + shape.str());
      for (int64_t i = 0; i < out.numel(); ++i) out.data()[i] += v.data()[i];
    }
    cluster_->all_reduce_sum(out.span());
    if (op == ReduceOp::Mean)
      for (auto& x : out.span()) x /= static_cast<float>(values.num_replicas() * cluster_->size());
    return out;
  }
  // Reduce along `axis` within each value, then across replicas.
  const int ax = *axis;
  Shape shape = values[0].shape();
  if (ax < 0 || ax >= shape.rank()) throw runtime_error("reduce: axis " + std::to_string(ax) + " out of range for " + shape.str());
  std::vector<int64_t> dims = shape.dims();
  dims.erase(dims.begin() + ax);
  Tensor out = Tensor::zeros(Shape(dims));
  int64_t count = 0;
  for (auto& v : values) {
    const auto& d = v.shape().dims();
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < ax; ++i) outer *= d[static_cast<size_t>(i)];
    for (int i = ax + 1; i < v.shape().rank(); ++i) inner *= d[static_cast<size_t>(i)];
    const int64_t len = d[static_cast<size_t>(ax)];
    if (outer * inner != out.numel()) throw runtime_error("reduce: replica values differ in shape beyond axis");
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < len; ++k)
        for (int64_t i = 0; i < inner; ++i) out.data()[o * inner + i] += v.data()[(o * len + k) * inner + i];
    count += len;
  }
  if (cluster_->size() > 1) {
    cluster_->all_reduce_sum(out.span());
    int64_t all = 0;
    for (double c : cluster_->all_gather({static_cast<double>(count)})) all += static_cast<int64_t>(c);
    count = all;
  }
  if (op == ReduceOp::Mean && count > 0)
    for (auto& x : out.span()) x /= static_cast<float>(count);
  return out;
}

DistributedDataset Strategy::distribute(std::shared_ptr<BatchPipeline> global_batches) const {
  return DistributedDataset(std::move(global_batches), num_replicas_in_sync(), first_local_replica(), num_local_replicas(),
                            devices());
}

DistributedDataset Strategy::distribute_datasets_from_function(
    const std::function<std::shared_ptr<BatchPipeline>(const InputContext&)>& fn) const {
  std::vector<std::shared_ptr<BatchPipeline>> pipelines;
  for (int r = 0; r < num_local_replicas(); ++r) {
    // One input pipeline per replica (TF has one per worker serving its
    // replicas; per replica is the simplest exact split).
    InputContext ctx{num_replicas_in_sync(), first_local_replica() + r, num_replicas_in_sync()};
    pipelines.push_back(fn(ctx));
  }
  return DistributedDataset(std::move(pipelines), cluster_->size(), devices());
}

}  // namespace strata
