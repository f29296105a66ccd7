#pragma once
#include "nn/Layer.h"
#include "nn/Padding.h"

namespace strata::nn {

// MaxPool2D and AveragePool2D (Keras defaults: strides = pool size, "valid").
// GlobalAveragePooling2D is the average over the whole image, (H, W, C) -> (C).
class Pool2DLayer final : public Layer {
public:
  enum class Kind { Max, Average, GlobalAverage };
  Pool2DLayer(Kind kind, int64_t pool_h, int64_t pool_w, int64_t stride_h, int64_t stride_w, Padding padding);
  std::string type() const override;
  Shape output_shape(const Shape& input) const override;
  Json config() const override;
  Tensor call(const Tensor& x, bool training) override;

private:
  Window2D window(const Shape& hwc, int64_t batch) const;

  Kind kind_;
  int64_t ph_, pw_, sh_, sw_;
  Padding padding_;
};

LayerPtr MaxPool2D(int64_t pool_size = 2, int64_t strides = 0, Padding padding = Padding::Valid);
LayerPtr AveragePool2D(int64_t pool_size = 2, int64_t strides = 0, Padding padding = Padding::Valid);
LayerPtr GlobalAveragePooling2D();

}  // namespace strata::nn
