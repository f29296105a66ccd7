#pragma once
#include "backend/Backend.h"
#include "nn/Layer.h"

namespace strata::nn {

// ReLU, Tanh, Sigmoid and Softmax as standalone layers (Keras' Activation).
class ActivationLayer final : public Layer {
public:
  explicit ActivationLayer(Activation activation) : activation_(activation) {}
  std::string type() const override;
  Shape output_shape(const Shape& input) const override { return input; }
  Json config() const override;
  Tensor call(const Tensor& x, bool training) override;
  std::optional<Tensor> call_with_next(const Layer& next, const Tensor& x, bool training) override;
  Activation activation() const { return activation_; }

private:
  Activation activation_;
};

LayerPtr ReLU();
LayerPtr Tanh();
LayerPtr Sigmoid();
LayerPtr Softmax();

// Applies an activation as a recorded op (used by layers that fuse one).
Tensor apply_activation(Activation act, const Tensor& x);

}  // namespace strata::nn
