#pragma once
#include "nn/Layer.h"

namespace strata::nn {

// keras.layers.Reshape: per-example target shape; one dimension may be -1.
class ReshapeLayer final : public Layer {
public:
  explicit ReshapeLayer(std::vector<int64_t> target);
  std::string type() const override { return "reshape"; }
  Shape output_shape(const Shape& input) const override;
  Json config() const override;
  Tensor call(const Tensor& x, bool training) override;

private:
  std::vector<int64_t> target_;
};

LayerPtr Reshape(std::vector<int64_t> target);

}  // namespace strata::nn
