#pragma once
#include <cstdint>
#include <vector>

#include "core/Tensor.h"

namespace strata {

// One batch as the model sees it: float features (images NHWC in [0, 1]
// after normalisation) and int32 labels. global_batch_size is the size of the
// whole step's batch across replicas, the divisor of compute_average_loss.
// A pending batch names its examples only (`rows`, indices into the dataset)
// and has no features or labels yet: the replica that trains on it gathers
// them (DistributedDataset::to_features).
struct Batch {
  Tensor features;
  Tensor labels;
  int64_t global_batch_size = 0;
  std::vector<int64_t> rows{};  // {}: Batch{features, labels, size} stays warning-free
  bool pending = false;         // rows only: features and labels still to gather
  int64_t size() const {
    if (pending) return static_cast<int64_t>(rows.size());
    return features.defined() && features.shape().rank() ? features.shape()[0] : 0;
  }
  // The batch on `device` (itself when it is there already, or pending).
  Batch to(const Device& device) const {
    if (pending) return *this;
    return Batch{features.to(device), labels.to(device), global_batch_size};
  }
};

}  // namespace strata
