#pragma once
#include "nn/Layer.h"

namespace strata::nn {

// (batch, d1, d2, ...) -> (batch, d1*d2*...). A view: no copy.
class FlattenLayer final : public Layer {
public:
  std::string type() const override { return "flatten"; }
  Shape output_shape(const Shape& input) const override { return Shape{input.numel()}; }
  Json config() const override;
  Tensor call(const Tensor& x, bool training) override;
};

LayerPtr Flatten();

// Reshape as a recorded op (the gradient is reshaped back).
Tensor reshape_op(const Tensor& x, const Shape& shape);

}  // namespace strata::nn
