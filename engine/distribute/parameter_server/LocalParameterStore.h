#pragma once
#include <memory>
#include <mutex>

#include "distribute/parameter_server/ParameterStore.h"
#include "nn/Optimizer.h"
#include "trace/TraceRecorder.h"

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
  std::vector<int64_t> pull(int worker, int64_t round) override;
  int64_t push(const std::vector<Tensor>& grads, const std::vector<int64_t>& pulled, const PushRecord& push) override;
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
  // One shard at a time, for a server process that holds only its own
  // shard current (the layout is the same everywhere). A shard's packed form
  // is its pieces' elements in plan order.
  int64_t shard_elements(int server) const;
  void pack(int server, const std::vector<const float*>& grads, float weight, float* out) const;
  // Writes a shard's packed weights into component `component` of the
  // model's variables (a worker pulling from a server process).
  void unpack_to_model(int server, const float* packed, int component);
  // Copies the shard's weights out (packed); returns its version.
  int64_t read_shard(int server, float* out);
  // Applies (or, with sync_slices > 0, sums) one packed gradient; returns
  // the updates applied since `pulled`.
  int64_t push_shard(int server, const float* packed, int64_t pulled, int sync_slices, int64_t round = -1);
  // A synchronous round that lost a slice (its worker died) is applied with
  // what it has once `slices` have arrived.
  void finish_sync_round(int server, int slices, int64_t round = -1);
  // The step timeline: each update a server applies becomes an `optimizer`
  // span on its server lane, of the round whose push completed it. Set
  // before training; null (the default) records nothing.
  void trace(trace::TraceRecorder* recorder) { tracer_ = recorder; }
  // Weights and optimizer slots of a shard, packed; and back (a chief
  // server gathering the others' shards for evaluation and checkpoints).
  std::vector<float> shard_state(int server);
  void set_shard_state(int server, const std::vector<float>& state, int64_t version);
  int64_t version(int server);

  // Fault injection for tests and demonstrations: server `server` fails
  // (throws) when it would apply its update number `at_update`.
  void fail_at(int server, int64_t at_update);

private:
  struct Shard;
  void apply(Shard& shard, const float* grads_of_shard, int64_t round);
  int64_t push_locked(Shard& shard, const float* packed, int64_t pulled, int sync_slices, int64_t round);
  std::vector<Tensor*> slots_of(int variable);

  std::vector<Variable*> vars_;
  std::vector<std::unique_ptr<Variable>> masters_;
  ShardPlan plan_;
  nn::Optimizer& optimizer_;
  std::vector<std::unique_ptr<Shard>> shards_;
  trace::TraceRecorder* tracer_ = nullptr;
};

}  // namespace strata
