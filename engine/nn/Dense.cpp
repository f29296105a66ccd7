#include "nn/Dense.h"

#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "nn/GradientTape.h"
#include "nn/Initializers.h"

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
  const int64_t batch = x.shape()[0], in = x.shape()[1], out = units_;
  Backend& be = backend_for(x.device());
  Tensor w = kernel_->value();
  Tensor y = Tensor::empty(Shape{batch, out});
  be.gemm(false, false, batch, out, in, 1.0f, x.data(), w.data(), 0.0f, y.data());
  Tensor b;
  if (use_bias_) {
    b = bias_->value();
    be.add_bias_rows(y.data(), b.data(), batch, out);
  }
  // Softmax's backward is not element-wise; the activation path handles it.
  if (activation_ != Activation::None) be.activation_forward(activation_, y.data(), y.data(), batch, out);

  std::vector<Tensor> inputs{x, w};
  if (use_bias_) inputs.push_back(b);
  const Activation act = activation_;
  const bool has_bias = use_bias_;
  record_op(std::move(inputs), y, [x, w, y, act, has_bias, batch, in, out](const Tensor& g, const std::vector<bool>& need) {
    Backend& bk = backend_for(g.device());
    Tensor dz = g;
    if (act != Activation::None) {
      dz = Tensor::empty(g.shape());
      bk.activation_backward(act, y.data(), g.data(), dz.data(), batch, out);
    }
    std::vector<Tensor> grads(has_bias ? 3 : 2);
    if (need[0]) {
      grads[0] = Tensor::empty(x.shape());
      bk.gemm(false, true, batch, in, out, 1.0f, dz.data(), w.data(), 0.0f, grads[0].data());
    }
    if (need[1]) {
      grads[1] = Tensor::empty(w.shape());
      bk.gemm(true, false, in, out, batch, 1.0f, x.data(), dz.data(), 0.0f, grads[1].data());
    }
    if (has_bias && need[2]) {
      grads[2] = Tensor::empty(Shape{out});
      bk.sum_rows(dz.data(), batch, out, grads[2].data(), false);
    }
    return grads;
  });
  return y;
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
