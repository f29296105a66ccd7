#pragma once
#include <vector>

namespace strata {

// One value per replica, in replica order (tf.distribute.PerReplica).
template <typename T>
class PerReplica {
public:
  PerReplica() = default;
  explicit PerReplica(std::vector<T> values) : values_(std::move(values)) {}
  int num_replicas() const { return static_cast<int>(values_.size()); }
  const T& operator[](int replica) const { return values_[static_cast<size_t>(replica)]; }
  T& operator[](int replica) { return values_[static_cast<size_t>(replica)]; }
  // strategy.experimental_local_results: the values on this worker.
  const std::vector<T>& values() const { return values_; }
  auto begin() const { return values_.begin(); }
  auto end() const { return values_.end(); }

private:
  std::vector<T> values_;
};

}  // namespace strata
