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
class Variable {
public:
  Variable(std::string name, Tensor initial);

  const std::string& name() const { return name_; }
  const Shape& shape() const { return components_.front().shape(); }
  Tensor& value();
  const Tensor& value() const;
  int num_components() const { return static_cast<int>(components_.size()); }
  Tensor& component(int replica) { return components_[static_cast<size_t>(replica)]; }
  const Tensor& component(int replica) const { return components_[static_cast<size_t>(replica)]; }
  // Overwrites every component (checkpoint restore, tests).
  void assign(const Tensor& value);

private:
  std::string name_;
  std::vector<Tensor> components_;
};

// How many components variables created on this thread get. Strategy::scope()
// sets it for its lifetime; outside any scope it is 1.
int variable_components();
class VariableComponentsScope {
public:
  explicit VariableComponentsScope(int components);
  ~VariableComponentsScope();
  VariableComponentsScope(const VariableComponentsScope&) = delete;
  VariableComponentsScope& operator=(const VariableComponentsScope&) = delete;

private:
  int previous_;
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
