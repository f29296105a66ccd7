#pragma once
#include <memory>
#include <mutex>

#include "distribute/ParameterStore.h"
#include "nn/Optimizer.h"

namespace strata {

// Parameter servers inside this process: each shard's master weights in host
// memory behind its own lock, updated by the optimizer as gradients arrive,
// so workers pushing to different shards never wait for each other. The
// optimizer's slot state belongs to the master variables (one component),
// which is what checkpoints save.
class LocalParameterStore final : public ParameterStore {
public:
  // vars: the model's variables (one component per worker); their component
  // 0 is the initial value of the masters.
  LocalParameterStore(const std::vector<Variable*>& vars, ShardPlan plan, nn::Optimizer& optimizer);
  ~LocalParameterStore() override;

  const ShardPlan& plan() const override { return plan_; }
  std::vector<int64_t> pull(int worker) override;
  int64_t push(const std::vector<Tensor>& grads, const std::vector<int64_t>& pulled, float weight, int sync_slices) override;
  std::vector<ServerStats> stats() const override;

  // The servers' variables (same names and shapes as the model's).
  std::vector<Variable*> masters() const;
  // Copies the masters into every component of the model's variables
  // (evaluation, checkpoints), or the model's component 0 into the masters
  // (after a checkpoint was loaded into the model).
  void copy_to_model();
  void copy_from_model();
  // Updates applied to shard 0 (the optimizer's step count for checkpoints);
  // set_updates continues a restored run's count.
  int64_t updates() const;
  void set_updates(int64_t n);
  // Fault injection for tests and demonstrations: server `server` fails
  // (throws) when it would apply its update number `at_update`.
  void fail_at(int server, int64_t at_update);

private:
  struct Shard;
  void apply(Shard& shard, const float* grads_of_shard);

  std::vector<Variable*> vars_;
  std::vector<std::unique_ptr<Variable>> masters_;
  ShardPlan plan_;
  nn::Optimizer& optimizer_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace strata
