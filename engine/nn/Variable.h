#pragma once
#include <string>
#include <vector>

#include "core/Tensor.h"

namespace strata {

// A trainable tensor. Under a mirrored strategy it holds one component per
// replica, identical at creation (replica 0's initial value copied to all, the
// broadcast of tf.distribute) and kept identical because every replica applies
// the same all-reduced gradients. value() returns the calling replica's
// component; with a single component (OneDevice, CentralStorage) every
// replica reads the same storage.
//
// Component i lives on the i-th device of the creating scope
// (VariableComponentsScope); the initial value may be anywhere (initialisers
// fill it on the host) and is copied, so a variable always owns its memory.
class Variable {
public:
  Variable(std::string name, const Tensor& initial);

  const std::string& name() const { return name_; }
  const Shape& shape() const { return components_.front().shape(); }
  Tensor& value();
  const Tensor& value() const;
  int num_components() const { return static_cast<int>(components_.size()); }
  Tensor& component(int replica) { return components_[static_cast<size_t>(replica)]; }
  // The component `replica` computes with: its own, or the one shared copy.
  Tensor& replica_component(int replica) { return components_.size() == 1 ? components_.front() : component(replica); }
  const Tensor& component(int replica) const { return components_[static_cast<size_t>(replica)]; }
  std::vector<Device> devices() const;
  // Overwrites every component from a tensor on any device (checkpoint
  // restore, tests); copies to devices are queued in their streams.
  void assign(const Tensor& value);

private:
  std::string name_;
  std::vector<Tensor> components_;
};

// Where the components of variables created on this thread live, one device
// each. Strategy::scope() sets it for its lifetime; outside any scope it is
// one component on the host.
const std::vector<Device>& variable_devices();
inline int variable_components() { return static_cast<int>(variable_devices().size()); }
class VariableComponentsScope {
public:
  explicit VariableComponentsScope(std::vector<Device> devices);
  ~VariableComponentsScope();
  VariableComponentsScope(const VariableComponentsScope&) = delete;
  VariableComponentsScope& operator=(const VariableComponentsScope&) = delete;

private:
  std::vector<Device> previous_;
};

// The replica the calling thread computes for (0 outside a strategy's run).
int current_replica();
class CurrentReplicaScope {
public:
  explicit CurrentReplicaScope(int replica);
  ~CurrentReplicaScope();
  CurrentReplicaScope(const CurrentReplicaScope&) = delete;
  CurrentReplicaScope& operator=(const CurrentReplicaScope&) = delete;

private:
  int previous_;
};

}  // namespace strata
