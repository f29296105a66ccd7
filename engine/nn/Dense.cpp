#include "nn/Dense.h"

#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "nn/Initializers.h"
#include "nn/LinearOp.h"

namespace strata::nn {

DenseLayer::DenseLayer(int64_t units, Activation activation, bool use_bias)
    : units_(units), activation_(activation), use_bias_(use_bias) {
  if (units <= 0) throw bad_input("Dense: units must be positive, got " + std::to_string(units));
}

Shape DenseLayer::output_shape(const Shape& input) const {
  if (input.rank() != 1)
    throw bad_input("Dense expects a flat input per example, got " + input.str() + " (add a Flatten layer first)");
  return Shape{units_};
}

Json DenseLayer::config() const {
  Json j = {{"type", "dense"}, {"units", units_}, {"activation", activation_name(activation_)}};
  if (!use_bias_) j["use_bias"] = false;
  return j;
}

void DenseLayer::create_variables(const Shape& input) {
  output_shape(input);
  kernel_ = add_variable("kernel", glorot_uniform(Shape{input[0], units_}, input[0], units_, seed()));
  if (use_bias_) bias_ = add_variable("bias", Tensor::zeros(Shape{units_}));
}

Tensor DenseLayer::call(const Tensor& x, bool /*training*/) {
  if (x.shape().rank() != 2 || x.shape()[1] != kernel_->shape()[0])
    throw bad_input("Dense(" + std::to_string(units_) + "): input shape " + x.shape().str() + " does not match kernel " +
                    kernel_->shape().str());
  return linear(x, kernel_->value(), use_bias_ ? bias_->value() : Tensor(), activation_);
}

LayerPtr Dense(int64_t units, Activation activation, bool use_bias) {
  return std::make_shared<DenseLayer>(units, activation, use_bias);
}

std::string activation_name(Activation a) {
  switch (a) {
    case Activation::None: return "linear";
    case Activation::Relu: return "relu";
    case Activation::Tanh: return "tanh";
    case Activation::Sigmoid: return "sigmoid";
    case Activation::Softmax: return "softmax";
  }
  return "linear";
}

bool parse_activation(const std::string& name, Activation& out) {
  if (name == "linear" || name == "none" || name.empty()) out = Activation::None;
  else if (name == "relu") out = Activation::Relu;
  else if (name == "tanh") out = Activation::Tanh;
  else if (name == "sigmoid") out = Activation::Sigmoid;
  else if (name == "softmax") out = Activation::Softmax;
  else return false;
  return true;
}

}  // namespace strata::nn
