#include "nn/Initializers.h"

#include <cmath>

#include "core/Rng.h"

namespace strata::nn {

Tensor glorot_uniform(const Shape& shape, int64_t fan_in, int64_t fan_out, uint64_t seed) {
  Tensor t = Tensor::empty(shape);
  const float limit = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
  float* p = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = (2.0f * uniform01(seed, static_cast<uint64_t>(i)) - 1.0f) * limit;
  return t;
}

}  // namespace strata::nn
