#pragma once
#include <cstdint>

#include "core/Tensor.h"

namespace strata::nn {

// Keras' default kernel initialiser: U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)).
// Values come from a counter-based stream keyed by `seed`, so they do not
// depend on threads or on the order other layers are built in.
Tensor glorot_uniform(const Shape& shape, int64_t fan_in, int64_t fan_out, uint64_t seed);

}  // namespace strata::nn
