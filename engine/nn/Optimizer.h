#pragma once
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backend/WeightStores.h"
#include "nn/ReplicaSync.h"
#include "nn/Variable.h"
#include "nn/json_fwd.h"

namespace strata::nn {

// How one replica updates: every element of the variables, or (`pieces`,
// the sharded update) its shard of them; `updaters` replicas update with
// their own step counters; `stores` as WeightStores says (Streamed where
// other replicas read the one copy it writes next).
struct ReplicaUpdate {
  int replica = 0;
  const std::vector<ShardPiece>* pieces = nullptr;
  int updaters = 1;
  WeightStores stores = WeightStores::Cached;
};

// Base for SGD and Adam. Slot variables (momenta) are created on first use
// with as many components as the variable they belong to, so under Mirrored
// every replica updates its own copy with the same all-reduced gradient.
class Optimizer {
public:
  explicit Optimizer(float learning_rate);
  virtual ~Optimizer() = default;
  virtual std::string type() const = 0;
  virtual Json config() const = 0;

  // Inside strategy.run this uses the calling replica's context (as Keras
  // does); outside any strategy it applies the gradients as given.
  void apply_gradients(const std::vector<Tensor>& grads, const std::vector<Variable*>& vars);
  // Inside strategy.run: reduce (sum) the gradients across replicas first,
  // once per step, then update this replica's copy (or, under the sharded
  // update, its shard of every replica's copy).
  void apply_gradients(ReplicaSync& ctx, std::vector<Tensor> grads, const std::vector<Variable*>& vars);
  // Same, for gradients already summed across replicas (by
  // ReplicaSync::finish_gradients, overlapping the backward pass). Under the
  // sharded update (ctx.update_shard()) only this replica's shard is
  // updated, then the strategy gathers the shards; the slot variables then
  // have one component that the replicas update shard by shard, so the
  // optimizer state exists once, not once per replica.
  void apply_summed_gradients(ReplicaSync& ctx, const std::vector<Tensor>& grads, const std::vector<Variable*>& vars);

  float learning_rate() const { return learning_rate_.load(std::memory_order_relaxed); }
  // Takes effect at the next update, also of a captured step being replayed
  // (the device copies are rewritten now). Call between steps; a parameter
  // server's worker threads may update meanwhile and read either rate.
  void set_learning_rate(float lr);
  // Updates applied so far (replica 0's count).
  int64_t iterations() const;
  // Creates the slot variables now (they are otherwise created on the first
  // update), e.g. so a checkpoint can be restored into them.
  void build(const std::vector<Variable*>& vars) { ensure_slots(vars); }
  void set_iterations(int64_t n);
  // A captured step was replayed: its updates ran on the device (the step
  // counters there advanced), so the host's counts advance to match.
  void count_replayed_step() {
    for (auto& i : iterations_) ++i;
  }
  // Slot state for checkpoints: name -> variable (e.g. "dense/kernel/m"),
  // component 0 holding the whole state. (Under the sharded update on
  // replicas with separate memories each replica holds only its shard; they
  // are gathered here into a host copy, and whatever is assigned to it (a
  // restore) is what the replicas update from at their next step.) Call
  // between steps.
  std::vector<std::pair<std::string, Variable*>> slot_variables();
  // Bytes of optimizer state the replicas hold (not the host copy kept for
  // checkpoints under the sharded update on separate memories).
  int64_t state_bytes() const;

  // Updates elements [offset, offset + count) of a single-component variable
  // with grad (count values) as the step-th update. A parameter server applies
  // its shard of a variable this way; build() must have run for `var`, and
  // disjoint ranges may be updated from different threads at once.
  // The variable must be on the host.
  void apply_slice(Variable& var, const float* grad, int64_t offset, int64_t count, int64_t step);
  // The state kept per weight (Adam: "m", "v"), in update()'s slot order.
  virtual std::vector<std::string> slot_names() const = 0;

protected:
  // Updates elements [offset, offset + count) of `w`; grad points at the
  // gradient of that range, slots[k] at the state of its first element for
  // slot_names()[k], lr_step at [learning rate, 1-based step], all in w's
  // device memory. `stores`: how to write w (Backend's WeightStores).
  virtual void update(Tensor& w, const float* grad, int64_t offset, int64_t count, float* const* slots, const float* lr_step,
                      WeightStores stores) = 0;
  // One update() of a step's many (every variable of a replica, or its shard
  // pieces), all with the same lr_step: update_all() may do them together.
  struct Update {
    Tensor* w;
    const float* grad;
    int64_t offset, count;
    std::array<float*, 2> state;  // slot_names()'s order (at most two)
  };
  // Calls update() for each, in order; an optimizer may fuse them.
  virtual void update_all(std::span<const Update> updates, const float* lr_step, WeightStores stores);

private:
  // With `pieces` (the sharded update, this replica's shard of `vars`) the
  // slot variables have one component: where the replicas share one memory
  // (host replicas, or several on one GPU) they update it shard by shard;
  // on separate memories it is a host copy for checkpoints, and each replica
  // holds only its shard's state (own_shard), so the memory is divided too.
  // Slots made earlier with one component per replica (build() before the
  // first step, for a restore) are folded into one then.
  void ensure_slots(const std::vector<Variable*>& vars, const ReplicaUpdate& how = {});
  // Sets up (or, after a restore, refreshes) `replica`'s shard state from
  // the slot variables. Under mutex_.
  void own_shard(const std::vector<Variable*>& vars, int replica, const std::vector<ShardPiece>& pieces);
  void gather_owned_state();
  Tensor& slot_component(const Variable& var, const std::string& name, int replica);
  // Where the slot variables hold the state of element `offset` of `var`
  // for `replica`, one pointer per name into `out`.
  void slot_state(const Variable& var, int replica, int64_t offset, const std::vector<std::string>& names, float** out);
  // Updates `vars` from `grads` as `how` says.
  void apply_local(const std::vector<Tensor>& grads, const std::vector<Variable*>& vars, const ReplicaUpdate& how);

  // [learning rate, step] in the device memory of each component's replica:
  // the update kernels read them there, and the step advances on the device.
  struct Hyper {
    Tensor values;
    uint64_t lr_version = 0;
  };
  void advance_step(size_t counter, const Device& device);

  std::atomic<float> learning_rate_;
  uint64_t lr_version_ = 0;
  std::vector<Hyper> hyper_;
  std::mutex mutex_;
  std::map<const Variable*, std::map<std::string, std::unique_ptr<Variable>>> slots_;
  std::vector<const Variable*> slot_order_;
  std::vector<int64_t> iterations_;
  bool state_single_ = false;  // the slot variables have one component (sharded update)
  // Sharded on separate memories: the variables the pieces index, and per
  // replica its pieces, where each starts in its state, and the state (one
  // flat tensor per slot name on the replica's device).
  struct Owned {
    std::vector<ShardPiece> pieces;
    std::vector<int64_t> start;
    std::vector<Tensor> state;
    uint64_t from_copy = 0;  // the host copy's version the state was last read from
  };
  std::vector<const Variable*> owned_vars_;
  std::vector<Owned> owned_;
  // Moves when slot_variables() hands the host copy out: it may be written.
  uint64_t copy_version_ = 1;
};

class SGD final : public Optimizer {
public:
  explicit SGD(float learning_rate = 0.01f, float momentum = 0.0f, bool nesterov = false);
  std::string type() const override { return "sgd"; }
  Json config() const override;
  float momentum() const { return momentum_; }
  bool nesterov() const { return nesterov_; }
  std::vector<std::string> slot_names() const override;

protected:
  void update(Tensor& w, const float* grad, int64_t offset, int64_t count, float* const* slots, const float* lr_step,
              WeightStores stores) override;

private:
  float momentum_;
  bool nesterov_;
};

// Keras defaults: lr 0.001, beta_1 0.9, beta_2 0.999, epsilon 1e-7.
class Adam final : public Optimizer {
public:
  explicit Adam(float learning_rate = 0.001f, float beta_1 = 0.9f, float beta_2 = 0.999f, float epsilon = 1e-7f);
  std::string type() const override { return "adam"; }
  Json config() const override;
  std::vector<std::string> slot_names() const override { return {"m", "v"}; }

protected:
  void update(Tensor& w, const float* grad, int64_t offset, int64_t count, float* const* slots, const float* lr_step,
              WeightStores stores) override;
  // All of them in one Backend::adam_update_many.
  void update_all(std::span<const Update> updates, const float* lr_step, WeightStores stores) override;

private:
  float beta_1_, beta_2_, epsilon_;
};

}  // namespace strata::nn
