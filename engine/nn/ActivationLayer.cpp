#include "nn/ActivationLayer.h"

#include <nlohmann/json.hpp>

#include "nn/Dense.h"
#include "nn/GradientTape.h"
#include "nn/Pool2D.h"

namespace strata::nn {

std::string ActivationLayer::type() const { return activation_name(activation_); }

Json ActivationLayer::config() const { return Json{{"type", type()}}; }

Tensor apply_activation(Activation act, const Tensor& x) {
  if (act == Activation::None) return x;
  const int64_t cols = x.shape().rank() == 0 ? 1 : x.shape()[x.shape().rank() - 1];
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  Tensor y = Tensor::empty(x.shape(), x.device());
  backend_for(x.device()).activation_forward(act, x.ptr(), y.ptr(), rows, cols);
  record_op({x}, y, [y, act, rows, cols](const Tensor& g, const std::vector<bool>&) {
    Tensor dx = Tensor::empty(g.shape(), g.device());
    backend_for(g.device()).activation_backward(act, y.ptr(), g.ptr(), dx.ptr(), rows, cols);
    return std::vector<Tensor>{dx};
  });
  return y;
}

Tensor ActivationLayer::call(const Tensor& x, bool) { return apply_activation(activation_, x); }

std::optional<Tensor> ActivationLayer::call_with_next(const Layer& next, const Tensor& x, bool) {
  // max(relu(x)) = relu(max(x)) with the same winner wherever the gradient
  // is not zero: relu on the pooled quarter of the pixels.
  const auto* pool = dynamic_cast<const Pool2DLayer*>(&next);
  if (activation_ != Activation::Relu || !pool || !pool->is_max()) return std::nullopt;
  return pool->call_max(x, Tensor(), activation_);
}

LayerPtr ReLU() { return std::make_shared<ActivationLayer>(Activation::Relu); }
LayerPtr Tanh() { return std::make_shared<ActivationLayer>(Activation::Tanh); }
LayerPtr Sigmoid() { return std::make_shared<ActivationLayer>(Activation::Sigmoid); }
LayerPtr Softmax() { return std::make_shared<ActivationLayer>(Activation::Softmax); }

}  // namespace strata::nn
