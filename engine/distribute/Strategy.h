#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "data/BatchPipeline.h"
#include "distribute/Cluster.h"
#include "distribute/DistributedDataset.h"
#include "distribute/PerReplica.h"
#include "distribute/ReplicaPool.h"
#include "distribute/collectives/ReduceOp.h"
#include "nn/Variable.h"

namespace strata {

// ParameterServerStrategy's settings.
struct ParameterServerOptions {
  int servers = 1;
  // How many rounds (global batches) a worker may run ahead of the oldest
  // unfinished one; 0 = synchronous, nullopt = unbounded (fully asynchronous).
  std::optional<int> staleness;
  int64_t min_shard_bytes = 0;  // 0: whole variables round-robin over servers
};

struct StrategyOptions {
  std::vector<Device> devices;          // empty: the strategy's default
  int threads = 0;                      // CPU threads in all, divided among replicas (0 = every core)
  std::string cross_device_ops = "auto";
  size_t fusion_bytes = 4u << 20;       // gradient bucket size for all-reduce
  // The sharded optimizer update (ZeRO-1: reduce-scatter, each replica
  // updates its shard, all-gather): "auto" (where the replicas keep their own
  // variables in one process and the cross-device ops can, unless their
  // all-reduce overlaps the backward pass, as NCCL's does), "on" (an error
  // where it cannot), "off".
  std::string sharded_update = "auto";
  double collective_timeout = 300;  // seconds a collective waits for the others (workers; NCCL GPUs)
  ParameterServerOptions parameter_server;
};

// While alive, variables created on this thread are mirrored as the strategy
// requires (tf.distribute.Strategy.scope()).
class StrategyScope {
public:
  explicit StrategyScope(std::vector<Device> devices) : scope_(std::move(devices)) {}

private:
  VariableComponentsScope scope_;
};

// The tf.distribute.Strategy API. Subclasses differ in where variables live
// (one component or one per replica) and which cross-device ops they use;
// running, reducing and distributing data are shared here.
class Strategy {
public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;

  // Replicas over all workers (what gradients are averaged over), and the
  // replicas of this process; equal unless the strategy spans workers.
  virtual int num_replicas_in_sync() const { return pool_->size() * cluster_->size(); }
  int num_local_replicas() const { return pool_->size(); }
  int first_local_replica() const { return cluster_->rank() * pool_->size(); }
  Cluster& cluster() const { return *cluster_; }
  // This process's replica devices.
  const std::vector<Device>& devices() const { return pool_->devices(); }
  // Seconds replica 0 has spent in collectives (waiting for the others included).
  double collective_seconds() const { return pool_->context(0).collective_seconds(); }
  const CrossDeviceOps& cross_device_ops() const { return pool_->cross_device_ops(); }
  // Whether the optimizer update is sharded across the replicas.
  bool sharded_update() const { return pool_->context(0).sharded_update(); }
  int threads_per_replica() const { return threads_per_replica_; }
  StrategyScope scope() const;

  // Runs fn(ctx, inputs[r]) - or fn(inputs[r]) - on every replica r in parallel.
  template <typename F>
  auto run(F&& fn, const PerReplica<Batch>& inputs) {
    constexpr bool with_ctx = std::is_invocable_v<F, ReplicaContext&, const Batch&>;
    auto call = [&fn](ReplicaContext& ctx, const Batch& b) {
      if constexpr (with_ctx) return fn(ctx, b);
      else return fn(b);
    };
    using R = std::invoke_result_t<decltype(call), ReplicaContext&, const Batch&>;
    if (inputs.num_replicas() != num_local_replicas())
      throw runtime_error("strategy.run: " + std::to_string(inputs.num_replicas()) + " inputs for " +
                          std::to_string(num_local_replicas()) + " replicas");
    std::vector<std::optional<R>> out(static_cast<size_t>(num_local_replicas()));
    run_replicas([&](ReplicaContext& ctx) {
      const int r = ctx.local_replica_id();
      out[static_cast<size_t>(r)] = call(ctx, inputs[r]);
    });
    std::vector<R> values;
    for (auto& v : out) values.push_back(std::move(*v));
    return PerReplica<R>(std::move(values));
  }

  // Runs fn(ctx) on every replica (no inputs); for functions returning void.
  void run_replicas(const std::function<void(ReplicaContext&)>& fn) { pool_->run(fn); }

  // Sum or mean across replicas (of every worker); with an axis, also across
  // that axis of each value (Mean then divides by the total count along it, as TF does).
  // Values may be on any devices; the result is on the host.
  Tensor reduce(ReduceOp op, const PerReplica<Tensor>& values, std::optional<int> axis = std::nullopt) const;
  std::vector<Tensor> experimental_local_results(const PerReplica<Tensor>& values) const { return values.values(); }

  DistributedDataset distribute(std::shared_ptr<BatchPipeline> global_batches) const;
  DistributedDataset distribute_datasets_from_function(
      const std::function<std::shared_ptr<BatchPipeline>(const InputContext&)>& fn) const;

protected:
  Strategy(std::vector<Device> devices, const StrategyOptions& options, std::unique_ptr<CrossDeviceOps> ops,
           bool variables_shared, int variable_components, std::shared_ptr<Cluster> cluster = nullptr);
  // Checks a replica device list: non-empty, known devices, no repeats.
  static std::vector<Device> validate_devices(std::vector<Device> devices, const std::string& strategy);
  // A CPU replica per core, up to 8: the replicas when none are named.
  static std::vector<Device> default_cpu_replicas();

private:
  std::shared_ptr<Cluster> cluster_;
  std::unique_ptr<ReplicaPool> pool_;
  int threads_per_replica_;
  int variable_components_;
};

// Logical CPU devices: at least one per core, at least 8 so small machines can
// still test replica counts (extra replicas then share cores).
int logical_cpu_device_count();

}  // namespace strata
