#include "nn/Variable.h"

#include "core/Error.h"
#include "nn/ReplicaSync.h"

namespace strata {

namespace {
thread_local ReplicaSync* t_sync = nullptr;
thread_local int t_components = 1;
thread_local int t_replica = 0;
}  // namespace

Variable::Variable(std::string name, Tensor initial) : name_(std::move(name)) {
  const int n = variable_components();
  components_.reserve(static_cast<size_t>(n));
  components_.push_back(initial);
  for (int i = 1; i < n; ++i) components_.push_back(initial.clone());
}

Tensor& Variable::value() {
  return components_.size() == 1 ? components_.front() : components_.at(static_cast<size_t>(current_replica()));
}

const Tensor& Variable::value() const {
  return components_.size() == 1 ? components_.front() : components_.at(static_cast<size_t>(current_replica()));
}

void Variable::assign(const Tensor& value) {
  if (value.shape() != shape())
    throw bad_input("variable " + name_ + ": cannot assign shape " + value.shape().str() + " to " + shape().str());
  for (auto& c : components_) c.copy_from(value);
}

int variable_components() { return t_components; }
VariableComponentsScope::VariableComponentsScope(int components) : previous_(t_components) { t_components = components; }
VariableComponentsScope::~VariableComponentsScope() { t_components = previous_; }

ReplicaSync* ReplicaSync::current() { return t_sync; }
ReplicaSync::Scope::Scope(ReplicaSync* sync) : previous_(t_sync) { t_sync = sync; }
ReplicaSync::Scope::~Scope() { t_sync = previous_; }

int current_replica() { return t_replica; }
CurrentReplicaScope::CurrentReplicaScope(int replica) : previous_(t_replica) { t_replica = replica; }
CurrentReplicaScope::~CurrentReplicaScope() { t_replica = previous_; }

}  // namespace strata
