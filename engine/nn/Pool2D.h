#pragma once
#include "backend/Backend.h"
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
  bool is_max() const { return kind_ == Kind::Max; }
  // Max pooling of x + bias with act after it (max_pool_op): how the layer
  // before hands its bias and relu on (Layer::call_with_next).
  Tensor call_max(const Tensor& x, const Tensor& bias, Activation act) const;

private:
  Window2D window(const Shape& hwc, int64_t batch) const;
  Window2D input_window(const Tensor& x) const;

  Kind kind_;
  int64_t ph_, pw_, sh_, sw_;
  Padding padding_;
};

// Max pooling as a recorded op: act(max over each window of x + bias), bias
// (channels) optional, act None or Relu (Backend::max_pool); backward gives
// the gradients of x and the bias.
Tensor max_pool_op(const Tensor& x, const Window2D& win, const Tensor& bias, Activation act);

LayerPtr MaxPool2D(int64_t pool_size = 2, int64_t strides = 0, Padding padding = Padding::Valid);
LayerPtr AveragePool2D(int64_t pool_size = 2, int64_t strides = 0, Padding padding = Padding::Valid);
LayerPtr GlobalAveragePooling2D();

}  // namespace strata::nn
