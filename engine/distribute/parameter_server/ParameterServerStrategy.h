#pragma once
#include <memory>

#include "distribute/Strategy.h"
#include "distribute/parameter_server/LocalParameterStore.h"

namespace strata {

// Asynchronous data parallelism (tf.distribute.experimental.ParameterServerStrategy):
// parameter servers hold the variables, sharded between them; workers
// (the replica devices) pull the current weights, compute gradients on
// their own slices of the data and push them; each server applies the
// optimizer to its shard as gradients arrive, with no barrier between
// workers. A ClusterCoordinator hands the slices out and enforces the
// staleness bound. Variables created in scope() get one component per worker
// (its private copy of the weights); place() creates the servers' copies.
class ParameterServerStrategy final : public Strategy {
public:
  // workers: one replica device each (empty: two CPU workers where the
  // machine has two or more cores). bad_input for 0 servers or a negative bound.
  // With a cluster of processes (mpirun), ranks [0, servers) serve and each
  // other rank is one worker on its single device.
  explicit ParameterServerStrategy(std::vector<Device> workers = {}, const StrategyOptions& options = {},
                                   std::shared_ptr<Cluster> cluster = nullptr);
  ~ParameterServerStrategy() override;
  std::string name() const override { return "parameter_server"; }

  // Workers are the replicas: each computes on its own slices.
  int num_replicas_in_sync() const override { return num_workers(); }
  int num_workers() const { return multi_process() ? cluster().size() - options_.servers : num_local_replicas(); }
  bool multi_process() const { return cluster().size() > 1; }
  // Across processes: this rank's role.
  bool is_server() const { return multi_process() && cluster().rank() < options_.servers; }
  int worker_index() const { return multi_process() ? cluster().rank() - options_.servers : 0; }
  const ParameterServerOptions& options() const { return options_; }
  int num_servers() const { return options_.servers; }
  const std::optional<int>& staleness_bound() const { return options_.staleness; }
  bool synchronous() const { return options_.staleness == 0; }

  // Shards vars (the model's trainable variables, built in scope()) over the
  // servers and gives the servers `optimizer`, whose state then belongs to
  // the servers' copies. bad_input when the plan is impossible.
  void place(const std::vector<Variable*>& vars, nn::Optimizer& optimizer);
  LocalParameterStore& store();

private:
  ParameterServerOptions options_;
  std::unique_ptr<LocalParameterStore> store_;
};

}  // namespace strata
