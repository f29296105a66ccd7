#pragma once
#include "backend/Backend.h"
#include "nn/Layer.h"

namespace strata::nn {

// y = act(x W + b): one fused node on the tape. Inputs of rank > 2 are
// flattened per example, as Keras' Dense does on the last axis only when
// the input is 2-D; we require 2-D (put a Flatten first) and say so.
class DenseLayer final : public Layer {
public:
  DenseLayer(int64_t units, Activation activation = Activation::None, bool use_bias = true);
  std::string type() const override { return "dense"; }
  Shape output_shape(const Shape& input) const override;
  Json config() const override;
  Tensor call(const Tensor& x, bool training) override;
  int64_t units() const { return units_; }
  Activation activation() const { return activation_; }
  Variable* kernel() { return kernel_; }
  Variable* bias() { return bias_; }

protected:
  void create_variables(const Shape& input) override;

private:
  int64_t units_;
  Activation activation_;
  bool use_bias_;
  Variable* kernel_ = nullptr;
  Variable* bias_ = nullptr;
};

LayerPtr Dense(int64_t units, Activation activation = Activation::None, bool use_bias = true);

std::string activation_name(Activation a);
// Parses "relu", "tanh", "sigmoid", "softmax", "linear"/"none"; false if unknown.
bool parse_activation(const std::string& name, Activation& out);

}  // namespace strata::nn
