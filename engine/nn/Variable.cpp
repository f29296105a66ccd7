#include "nn/Variable.h"

#include "core/Error.h"
#include "nn/ReplicaSync.h"

namespace strata {

namespace {
thread_local ReplicaSync* t_sync = nullptr;
thread_local std::vector<Device> t_devices{Device{}};
thread_local int t_replica = 0;
}  // namespace

Variable::Variable(std::string name, const Tensor& initial) : name_(std::move(name)) {
  const auto& devices = variable_devices();
  components_.reserve(devices.size());
  for (const Device& d : devices) components_.push_back(initial.device().same_memory(d) ? initial.clone() : initial.to(d));
}

std::vector<Device> Variable::devices() const {
  std::vector<Device> out;
  for (auto& c : components_) out.push_back(c.device());
  return out;
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

const std::vector<Device>& variable_devices() { return t_devices; }
VariableComponentsScope::VariableComponentsScope(std::vector<Device> devices) : previous_(std::move(t_devices)) {
  if (devices.empty()) devices.push_back(Device{});
  t_devices = std::move(devices);
}
VariableComponentsScope::~VariableComponentsScope() { t_devices = std::move(previous_); }

ReplicaSync* ReplicaSync::current() { return t_sync; }
ReplicaSync::Scope::Scope(ReplicaSync* sync) : previous_(t_sync) { t_sync = sync; }
ReplicaSync::Scope::~Scope() { t_sync = previous_; }

int current_replica() { return t_replica; }
CurrentReplicaScope::CurrentReplicaScope(int replica) : previous_(t_replica) { t_replica = replica; }
CurrentReplicaScope::~CurrentReplicaScope() { t_replica = previous_; }

}  // namespace strata
