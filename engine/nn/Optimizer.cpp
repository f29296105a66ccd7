#include "nn/Optimizer.h"

#include <nlohmann/json.hpp>

#include "backend/Backend.h"
#include "core/Error.h"

namespace strata::nn {

Optimizer::Optimizer(float learning_rate) : learning_rate_(learning_rate) {
  if (!(learning_rate > 0.0f)) throw bad_input("learning rate must be positive, got " + std::to_string(learning_rate));
}

void Optimizer::ensure_slots(const std::vector<Variable*>& vars) {
  // Replicas arrive concurrently on the first step; one creates the slots.
  std::lock_guard lock(mutex_);
  if (iterations_.empty()) iterations_.resize(1, 0);
  for (auto* v : vars) {
    if (slots_.count(v)) continue;
    VariableComponentsScope scope(v->num_components());
    auto& m = slots_[v];
    for (auto& name : slot_names()) m[name] = std::make_unique<Variable>(v->name() + "/" + name, Tensor::zeros(v->shape()));
    slot_order_.push_back(v);
    if (static_cast<int>(iterations_.size()) < v->num_components()) iterations_.resize(static_cast<size_t>(v->num_components()), 0);
  }
}

Tensor& Optimizer::slot(Variable& var, const std::string& name, int replica) {
  Variable& s = *slots_.at(&var).at(name);
  return s.num_components() == 1 ? s.component(0) : s.component(replica);
}

int64_t Optimizer::iterations() const { return iterations_.empty() ? 0 : iterations_[0]; }

std::vector<std::pair<std::string, Variable*>> Optimizer::slot_variables() {
  std::vector<std::pair<std::string, Variable*>> out;
  for (auto* v : slot_order_)
    for (auto& [name, s] : slots_.at(v)) out.emplace_back(s->name(), s.get());
  return out;
}

void Optimizer::apply_local(const std::vector<Tensor>& grads, const std::vector<Variable*>& vars, int replica) {
  if (grads.size() != vars.size())
    throw runtime_error("apply_gradients: " + std::to_string(grads.size()) + " gradients for " +
                        std::to_string(vars.size()) + " variables");
  ensure_slots(vars);
  const size_t counter = vars.empty() || vars.front()->num_components() == 1 ? 0 : static_cast<size_t>(replica);
  const int64_t step = ++iterations_[counter];
  for (size_t i = 0; i < vars.size(); ++i) update(*vars[i], replica, grads[i].data(), 0, grads[i].numel(), step);
}

void Optimizer::apply_gradients(const std::vector<Tensor>& grads, const std::vector<Variable*>& vars) {
  if (ReplicaSync* ctx = ReplicaSync::current()) {
    apply_gradients(*ctx, grads, vars);
    return;
  }
  apply_local(grads, vars, current_replica());
}

void Optimizer::apply_gradients(ReplicaSync& ctx, std::vector<Tensor> grads, const std::vector<Variable*>& vars) {
  ctx.all_reduce_sum(grads);
  // Variable components are indexed by the replica's place in this process
  // (current_replica()), not by its id among all workers' replicas.
  if (!ctx.variables_shared()) {
    apply_local(grads, vars, current_replica());
    return;
  }
  // One copy of each variable: replica 0 updates it while the others wait,
  // so no replica reads a half-updated weight.
  ctx.barrier();
  if (ctx.replica_id_in_sync_group() == 0) apply_local(grads, vars, 0);
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

void SGD::update(Variable& var, int replica, const float* grad, int64_t offset, int64_t count, int64_t) {
  Tensor& w = var.num_components() == 1 ? var.component(0) : var.component(replica);
  float* velocity = momentum_ == 0.0f ? nullptr : slot(var, "momentum", replica).data() + offset;
  backend_for(w.device()).sgd_update(count, w.data() + offset, grad, velocity, learning_rate(), momentum_, nesterov_);
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

void Adam::update(Variable& var, int replica, const float* grad, int64_t offset, int64_t count, int64_t step) {
  Tensor& w = var.num_components() == 1 ? var.component(0) : var.component(replica);
  AdamParams p{learning_rate(), beta_1_, beta_2_, epsilon_, step};
  backend_for(w.device()).adam_update(count, w.data() + offset, grad, slot(var, "m", replica).data() + offset,
                                      slot(var, "v", replica).data() + offset, p);
}

}  // namespace strata::nn
