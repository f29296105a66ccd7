#include "nn/Flatten.h"

#include <nlohmann/json.hpp>

#include "nn/GradientTape.h"

namespace strata::nn {

Json FlattenLayer::config() const { return Json{{"type", "flatten"}}; }

Tensor reshape_op(const Tensor& x, const Shape& shape) {
  Tensor y = x.reshape(shape);
  const Shape in = x.shape();
  record_op({x}, y, [in](const Tensor& g, const std::vector<bool>&) { return std::vector<Tensor>{g.reshape(in)}; });
  return y;
}

Tensor FlattenLayer::call(const Tensor& x, bool) {
  const int64_t batch = x.shape().rank() ? x.shape()[0] : 1;
  return reshape_op(x, Shape{batch, x.shape().inner()});
}

LayerPtr Flatten() { return std::make_shared<FlattenLayer>(); }

}  // namespace strata::nn
