#pragma once
#include <cstdint>

#include "core/Tensor.h"

namespace strata {

// One batch as the model sees it: float features (images NHWC in [0, 1]
// after normalisation) and int32 labels. global_batch_size is the size of the
// whole step's batch across replicas, the divisor of compute_average_loss.
struct Batch {
  Tensor features;
  Tensor labels;
  int64_t global_batch_size = 0;
  int64_t size() const { return features.defined() && features.shape().rank() ? features.shape()[0] : 0; }
  // The batch on `device` (itself when it is there already).
  Batch to(const Device& device) const { return Batch{features.to(device), labels.to(device), global_batch_size}; }
};

}  // namespace strata
