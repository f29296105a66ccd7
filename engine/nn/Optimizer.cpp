#include "nn/Optimizer.h"

#include <algorithm>
#include <bit>
#include <nlohmann/json.hpp>

#include "backend/Backend.h"
#include "core/Error.h"

namespace strata::nn {

Optimizer::Optimizer(float learning_rate) : learning_rate_(learning_rate) {
  if (!(learning_rate > 0.0f)) throw bad_input("learning rate must be positive, got " + std::to_string(learning_rate));
}

namespace {
bool one_memory(const Variable& v) {
  for (int c = 1; c < v.num_components(); ++c)
    if (!v.component(c).device().same_memory(v.component(0).device())) return false;
  return true;
}
}  // namespace

void Optimizer::ensure_slots(const std::vector<Variable*>& vars, const ReplicaUpdate& how) {
  const std::vector<ShardPiece>* pieces = how.pieces;
  // Replicas arrive concurrently on the first step; one creates the slots.
  std::lock_guard lock(mutex_);
  if (iterations_.empty()) iterations_.resize(1, 0);
  const bool sharded = pieces && !vars.empty();
  const bool separate = sharded && !one_memory(*vars.front());
  // One component per slot variable: on the variables' memory, or on the
  // host as the checkpoints' copy when each replica holds its shard itself.
  const Device single = separate || vars.empty() ? Device{} : vars.front()->devices().front();
  if (sharded && !state_single_) {
    // Every component holds the same values (all replicas applied the same
    // updates, or a checkpoint was restored into all): keep one.
    for (auto& [var, named] : slots_)
      for (auto& [name, s] : named)
        if (s->num_components() > 1 || !s->component(0).device().same_memory(single)) {
          VariableComponentsScope scope({single});
          s = std::make_unique<Variable>(s->name(), s->component(0).to(single));
        }
    state_single_ = true;
  }
  for (auto* v : vars) {
    if (slots_.count(v)) continue;
    VariableComponentsScope scope(state_single_ ? std::vector<Device>{single} : v->devices());
    auto& m = slots_[v];
    for (auto& name : slot_names()) m[name] = std::make_unique<Variable>(v->name() + "/" + name, Tensor::zeros(v->shape()));
    slot_order_.push_back(v);
  }
  const int counters = std::max(how.updaters, vars.empty() ? 1 : vars.front()->num_components());
  // New counters start where the others are (set_iterations before the
  // first sharded step, a restore, sized them by the variables alone).
  if (static_cast<int>(iterations_.size()) < counters) iterations_.resize(static_cast<size_t>(counters), iterations_.front());
  if (separate) own_shard(vars, how.replica, *pieces);
  // Sized here, under the lock and before any update reads it.
  if (hyper_.size() < iterations_.size()) hyper_.resize(iterations_.size());
}

void Optimizer::own_shard(const std::vector<Variable*>& vars, int replica, const std::vector<ShardPiece>& pieces) {
  if (owned_.empty()) {
    owned_vars_.assign(vars.begin(), vars.end());
    owned_.resize(static_cast<size_t>(vars.front()->num_components()));
  }
  Owned& o = owned_.at(static_cast<size_t>(replica));
  if (o.from_copy == copy_version_) return;
  const std::vector<std::string> names = slot_names();
  const Device on = vars.front()->replica_component(replica).device();
  if (o.state.empty()) {
    o.pieces = pieces;
    int64_t total = 0;
    for (const ShardPiece& p : pieces) {
      o.start.push_back(total);
      total += p.count;
    }
    for (size_t k = 0; k < names.size(); ++k) o.state.push_back(Tensor::empty(Shape{total}, DType::Float32, on));
  }
  // The shard's state from the host copy: zeros at first, or what a
  // checkpoint restored into it.
  for (size_t k = 0; k < names.size(); ++k)
    for (size_t i = 0; i < o.pieces.size(); ++i) {
      const ShardPiece& p = o.pieces[i];
      const Tensor& whole = slot_component(*vars[static_cast<size_t>(p.variable)], names[k], 0);
      copy_bytes(on, o.state[k].ptr() + o.start[i], whole.device(), whole.ptr() + p.offset,
                 static_cast<size_t>(p.count) * sizeof(float));
    }
  o.from_copy = copy_version_;
}

Tensor& Optimizer::slot_component(const Variable& var, const std::string& name, int replica) {
  return slots_.at(&var).at(name)->replica_component(replica);
}

void Optimizer::slot_state(const Variable& var, int replica, int64_t offset, const std::vector<std::string>& names,
                           float** out) {
  for (size_t k = 0; k < names.size(); ++k) out[k] = slot_component(var, names[k], replica).ptr() + offset;
}

int64_t Optimizer::state_bytes() const {
  int64_t bytes = 0;
  for (const Owned& o : owned_)
    for (const Tensor& t : o.state) bytes += static_cast<int64_t>(t.bytes());
  if (!owned_.empty()) return bytes;  // the slot variables are the host copy
  for (auto& [var, named] : slots_)
    for (auto& [name, s] : named)
      for (int c = 0; c < s->num_components(); ++c) bytes += static_cast<int64_t>(s->component(c).bytes());
  return bytes;
}

int64_t Optimizer::iterations() const { return iterations_.empty() ? 0 : iterations_[0]; }

void Optimizer::gather_owned_state() {
  const std::vector<std::string> names = slot_names();
  for (const Owned& o : owned_)
    for (size_t k = 0; k < o.state.size(); ++k)
      for (size_t i = 0; i < o.pieces.size(); ++i) {
        const ShardPiece& p = o.pieces[i];
        Tensor& whole = slot_component(*owned_vars_[static_cast<size_t>(p.variable)], names[k], 0);
        copy_bytes(whole.device(), whole.ptr() + p.offset, o.state[k].device(), o.state[k].ptr() + o.start[i],
                   static_cast<size_t>(p.count) * sizeof(float));
      }
}

std::vector<std::pair<std::string, Variable*>> Optimizer::slot_variables() {
  std::lock_guard lock(mutex_);
  gather_owned_state();
  if (!owned_.empty()) ++copy_version_;  // the caller may write the copy: the shards reread it
  std::vector<std::pair<std::string, Variable*>> out;
  for (auto* v : slot_order_)
    for (auto& [name, s] : slots_.at(v)) out.emplace_back(s->name(), s.get());
  return out;
}

void Optimizer::apply_local(const std::vector<Tensor>& grads, const std::vector<Variable*>& vars, const ReplicaUpdate& how) {
  const std::vector<ShardPiece>* pieces = how.pieces;
  const int replica = how.replica;
  if (grads.size() != vars.size())
    throw runtime_error("apply_gradients: " + std::to_string(grads.size()) + " gradients for " +
                        std::to_string(vars.size()) + " variables");
  if (pieces)
    for (const ShardPiece& p : *pieces)
      if (p.variable < 0 || static_cast<size_t>(p.variable) >= vars.size())
        throw runtime_error("apply_gradients: a shard names variable " + std::to_string(p.variable) + " of " +
                            std::to_string(vars.size()));
  ensure_slots(vars, how);
  // Every replica that updates counts its own steps (its step scalar is in
  // its device's memory), also where they share one copy shard by shard.
  const bool own_counter = pieces || (!vars.empty() && vars.front()->num_components() > 1);
  const size_t counter = own_counter ? static_cast<size_t>(replica) : 0;
  ++iterations_[counter];
  if (vars.empty()) return;
  advance_step(counter, vars.front()->replica_component(replica).device());
  const float* lr_step = hyper_[counter].values.ptr();
  for (size_t i = 0; i < vars.size(); ++i) {
    const Device on = vars[i]->replica_component(replica).device();
    if (!grads[i].device().same_memory(on))
      throw runtime_error("apply_gradients: the gradient of " + vars[i]->name() + " is on " + grads[i].device().str() +
                          ", the variable on " + on.str());
    if (grads[i].numel() != vars[i]->replica_component(replica).numel())
      throw runtime_error("apply_gradients: the gradient of " + vars[i]->name() + " has shape " + grads[i].shape().str() +
                          ", the variable " + vars[i]->shape().str());
  }
  const std::vector<std::string> names = slot_names();
  if (names.size() > std::tuple_size_v<decltype(Update::state)>)
    throw runtime_error("apply_gradients: an optimizer with " + std::to_string(names.size()) + " slots");
  std::vector<Update> updates;
  updates.reserve(pieces ? pieces->size() : vars.size());
  if (!pieces) {
    for (size_t i = 0; i < vars.size(); ++i) {
      Update u{&vars[i]->replica_component(replica), grads[i].ptr(), 0, grads[i].numel(), {}};
      slot_state(*vars[i], replica, 0, names, u.state.data());
      updates.push_back(u);
    }
  } else {
    Owned* owned = owned_.empty() ? nullptr : &owned_[static_cast<size_t>(replica)];
    for (size_t i = 0; i < pieces->size(); ++i) {
      const ShardPiece& p = (*pieces)[i];
      const auto v = static_cast<size_t>(p.variable);
      Update u{&vars[v]->replica_component(replica), grads[v].ptr() + p.offset, p.offset, p.count, {}};
      if (owned)
        for (size_t k = 0; k < names.size(); ++k) u.state[k] = owned->state[k].ptr() + owned->start[i];
      else slot_state(*vars[v], replica, p.offset, names, u.state.data());
      updates.push_back(u);
    }
  }
  update_all(updates, lr_step, how.stores);
}

void Optimizer::update_all(std::span<const Update> updates, const float* lr_step, WeightStores stores) {
  for (const Update& u : updates) update(*u.w, u.grad, u.offset, u.count, u.state.data(), lr_step, stores);
}

void Optimizer::advance_step(size_t counter, const Device& device) {
  // Created on the first update of this replica; afterwards the step only
  // advances on the device and the learning rate is rewritten when it changed.
  Hyper& h = hyper_[counter];
  if (!h.values.defined() || !h.values.device().same_memory(device)) {
    const float init[2] = {learning_rate(), static_cast<float>(iterations_[counter])};
    h.values = Tensor::from(Shape{2}, init, device);
    h.lr_version = lr_version_;
    return;
  }
  Backend& be = backend_for(device);
  be.add_scalar(1, 1.0f, h.values.ptr() + 1);
  if (h.lr_version != lr_version_) {
    be.fill32(h.values.ptr(), 1, std::bit_cast<uint32_t>(learning_rate()));
    h.lr_version = lr_version_;
  }
}

void Optimizer::set_learning_rate(float lr) {
  // 0 is allowed here: a cosine schedule ends there.
  if (!(lr >= 0.0f)) throw bad_input("learning rate must be a non-negative number, got " + std::to_string(lr));
  if (lr == learning_rate()) return;
  learning_rate_.store(lr, std::memory_order_relaxed);
  ++lr_version_;
  // A replayed step runs no host code (advance_step does not run): its
  // updates read the rate from these device scalars, so write them now.
  for (Hyper& h : hyper_) {
    if (!h.values.defined()) continue;
    backend_for(h.values.device()).fill32(h.values.ptr(), 1, std::bit_cast<uint32_t>(lr));
    h.lr_version = lr_version_;
  }
}

void Optimizer::set_iterations(int64_t n) {
  for (auto& i : iterations_) i = n;
  // Rebuilt from the host counters at the next update.
  for (auto& h : hyper_) h.values = Tensor();
}

void Optimizer::apply_slice(Variable& var, const float* grad, int64_t offset, int64_t count, int64_t step) {
  const float lr_step[2] = {learning_rate(), static_cast<float>(step)};
  const std::vector<std::string> names = slot_names();
  std::vector<float*> state(names.size());
  slot_state(var, 0, offset, names, state.data());
  update(var.component(0), grad, offset, count, state.data(), lr_step, WeightStores::Cached);
}

void Optimizer::apply_gradients(const std::vector<Tensor>& grads, const std::vector<Variable*>& vars) {
  if (ReplicaSync* ctx = ReplicaSync::current()) {
    apply_gradients(*ctx, grads, vars);
    return;
  }
  apply_local(grads, vars, {.replica = current_replica()});
}

void Optimizer::apply_gradients(ReplicaSync& ctx, std::vector<Tensor> grads, const std::vector<Variable*>& vars) {
  ctx.finish_gradients(grads);
  apply_summed_gradients(ctx, grads, vars);
}

void Optimizer::apply_summed_gradients(ReplicaSync& ctx, const std::vector<Tensor>& grads,
                                       const std::vector<Variable*>& vars) {
  // Variable components are indexed by the replica's place in this process
  // (current_replica()), not by its id among all workers' replicas.
  // One copy that the other replicas read next (their own shards of it, or
  // CentralStorage's) is written past this core's caches (WeightStores).
  const bool one_copy = !vars.empty() && vars.front()->num_components() == 1 && ctx.num_replicas_in_sync() > 1;
  const WeightStores stores = one_copy ? WeightStores::Streamed : WeightStores::Cached;
  if (!ctx.variables_shared()) {
    const std::vector<ShardPiece>* shard = ctx.update_shard();
    if (!shard) {
      apply_local(grads, vars, {.replica = current_replica()});
      return;
    }
    // Sharding is among one process's replicas: num_replicas_in_sync() of them.
    apply_local(grads, vars,
                {.replica = current_replica(), .pieces = shard, .updaters = ctx.num_replicas_in_sync(), .stores = stores});
    ctx.gather_updated(vars);
    return;
  }
  // One copy of each variable: replica 0 updates it while the others wait,
  // so no replica reads a half-updated weight.
  ctx.barrier();
  if (ctx.replica_id_in_sync_group() == 0) apply_local(grads, vars, {.stores = stores});
  ctx.barrier();
}

// ---- SGD ----------------------------------------------------------------------

SGD::SGD(float learning_rate, float momentum, bool nesterov)
    : Optimizer(learning_rate), momentum_(momentum), nesterov_(nesterov) {
  if (momentum < 0.0f || momentum >= 1.0f) throw bad_input("SGD momentum must be in [0, 1), got " + std::to_string(momentum));
}

Json SGD::config() const {
  return Json{{"type", "sgd"}, {"learning_rate", learning_rate()}, {"momentum", momentum_}, {"nesterov", nesterov_}};
}

std::vector<std::string> SGD::slot_names() const {
  if (momentum_ == 0.0f) return {};
  return {"momentum"};
}

void SGD::update(Tensor& w, const float* grad, int64_t offset, int64_t count, float* const* slots, const float* lr_step,
                 WeightStores stores) {
  backend_for(w.device())
      .sgd_update(count, w.ptr() + offset, grad, momentum_ == 0.0f ? nullptr : slots[0], lr_step, momentum_, nesterov_,
                  stores);
}

// ---- Adam ---------------------------------------------------------------------

Adam::Adam(float learning_rate, float beta_1, float beta_2, float epsilon)
    : Optimizer(learning_rate), beta_1_(beta_1), beta_2_(beta_2), epsilon_(epsilon) {
  if (!(beta_1 >= 0.0f && beta_1 < 1.0f)) throw bad_input("Adam beta_1 must be in [0, 1)");
  if (!(beta_2 >= 0.0f && beta_2 < 1.0f)) throw bad_input("Adam beta_2 must be in [0, 1)");
  if (!(epsilon > 0.0f)) throw bad_input("Adam epsilon must be positive");
}

Json Adam::config() const {
  return Json{{"type", "adam"}, {"learning_rate", learning_rate()}, {"beta_1", beta_1_}, {"beta_2", beta_2_}, {"epsilon", epsilon_}};
}

void Adam::update(Tensor& w, const float* grad, int64_t offset, int64_t count, float* const* slots, const float* lr_step,
                  WeightStores stores) {
  AdamParams p{beta_1_, beta_2_, epsilon_};
  backend_for(w.device()).adam_update(count, w.ptr() + offset, grad, slots[0], slots[1], p, lr_step, stores);
}

void Adam::update_all(std::span<const Update> updates, const float* lr_step, WeightStores stores) {
  if (updates.empty()) return;
  // One replica's updates, on its device, as lr_step is (apply_local checked).
  std::vector<AdamTensor> tensors;
  tensors.reserve(updates.size());
  for (const Update& u : updates) tensors.push_back({u.count, u.w->ptr() + u.offset, u.grad, u.state[0], u.state[1]});
  backend_for(updates.front().w->device()).adam_update_many(tensors, AdamParams{beta_1_, beta_2_, epsilon_}, lr_step, stores);
}

}  // namespace strata::nn
