#include "nn/Pool2D.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "backend/Backend.h"
#include "core/Error.h"
#include "nn/GradientTape.h"

namespace strata::nn {

Pool2DLayer::Pool2DLayer(Kind kind, int64_t pool_h, int64_t pool_w, int64_t stride_h, int64_t stride_w, Padding padding)
    : kind_(kind), ph_(pool_h), pw_(pool_w), sh_(stride_h), sw_(stride_w), padding_(padding) {
  if (kind != Kind::GlobalAverage && (pool_h <= 0 || pool_w <= 0 || stride_h <= 0 || stride_w <= 0))
    throw bad_input(type() + ": pool size and strides must be positive");
}

std::string Pool2DLayer::type() const {
  switch (kind_) {
    case Kind::Max: return "max_pool2d";
    case Kind::Average: return "average_pool2d";
    case Kind::GlobalAverage: return "global_average_pooling2d";
  }
  return "";
}

Window2D Pool2DLayer::window(const Shape& hwc, int64_t batch) const {
  if (kind_ == Kind::GlobalAverage) {
    if (hwc.rank() != 3) throw bad_input(type() + " expects images (height, width, channels), got " + hwc.str());
    return make_window(hwc, batch, hwc[0], hwc[1], 1, 1, Padding::Valid, type());
  }
  return make_window(hwc, batch, ph_, pw_, sh_, sw_, padding_, type());
}

Shape Pool2DLayer::output_shape(const Shape& input) const {
  Window2D w = window(input, 1);
  if (kind_ == Kind::GlobalAverage) return Shape{w.channels};
  return Shape{w.out_h, w.out_w, w.channels};
}

Json Pool2DLayer::config() const {
  if (kind_ == Kind::GlobalAverage) return Json{{"type", type()}};
  return Json{{"type", type()}, {"pool_size", {ph_, pw_}}, {"strides", {sh_, sw_}}, {"padding", padding_name(padding_)}};
}

Tensor max_pool_op(const Tensor& x, const Window2D& win, const Tensor& bias, Activation act) {
  // The winners' places are 32-bit flat indices into the input.
  if (x.numel() > std::numeric_limits<int32_t>::max())
    throw bad_input("max_pool2d: an input of " + std::to_string(x.numel()) + " elements " + x.shape().str() +
                    " is more than max pooling's 32-bit indices reach (2^31 - 1); use a smaller batch");
  const Shape out_shape{win.batch, win.out_h, win.out_w, win.channels};
  Tensor y = Tensor::empty(out_shape, x.device());
  Tensor argmax = Tensor::empty(out_shape, DType::Int32, x.device());
  const bool has_bias = bias.defined();
  backend_for(x.device()).max_pool(win, x.ptr(), has_bias ? bias.ptr() : nullptr, act, y.ptr(), argmax.int_ptr());
  std::vector<Tensor> inputs{x};
  if (has_bias) inputs.push_back(bias);
  const Shape in_shape = x.shape();
  record_op(std::move(inputs), y, [win, argmax, y, act, has_bias, in_shape](const Tensor& g, const std::vector<bool>& need) {
    Backend& be = backend_for(g.device());
    const int64_t rows = win.batch * win.out_h * win.out_w;
    std::vector<Tensor> grads(has_bias ? 2 : 1);
    // Every pooled output took its bias once, through its winner.
    const bool bias_gradient = has_bias && need[1];
    if (bias_gradient) grads[1] = Tensor::empty(Shape{win.channels}, g.device());
    // The activation's gradient on the pooled outputs, a quarter
    // of the pixels a 2x2 pool takes: the pixels that lost get
    // none either way. The bias's in the same pass where there is one.
    Tensor gm = g;
    if (act != Activation::None) {
      gm = Tensor::empty(g.shape(), g.device());
      if (bias_gradient) be.bias_activation_backward(act, y.ptr(), g.ptr(), gm.ptr(), grads[1].ptr(), rows, win.channels);
      else be.activation_backward(act, y.ptr(), g.ptr(), gm.ptr(), rows, win.channels);
    } else if (bias_gradient) {
      be.sum_rows(gm.ptr(), rows, win.channels, grads[1].ptr(), false);
    }
    if (need[0]) {
      grads[0] = Tensor::empty(in_shape, g.device());
      be.max_pool_backward(win, gm.ptr(), argmax.int_ptr(), grads[0].ptr());
    }
    return grads;
  });
  return y;
}

Tensor Pool2DLayer::call_max(const Tensor& x, const Tensor& bias, Activation act) const {
  return max_pool_op(x, input_window(x), bias, act);
}

Window2D Pool2DLayer::input_window(const Tensor& x) const {
  if (x.shape().rank() != 4) throw bad_input(type() + " expects (batch, height, width, channels), got " + x.shape().str());
  return window(Shape{x.shape()[1], x.shape()[2], x.shape()[3]}, x.shape()[0]);
}

Tensor Pool2DLayer::call(const Tensor& x, bool) {
  const Window2D win = input_window(x);
  if (kind_ == Kind::Max) return max_pool_op(x, win, Tensor(), Activation::None);
  Backend& be = backend_for(x.device());
  const Shape out_shape = kind_ == Kind::GlobalAverage ? Shape{win.batch, win.channels}
                                                       : Shape{win.batch, win.out_h, win.out_w, win.channels};
  Tensor y = Tensor::empty(out_shape, x.device());
  const Shape in_shape = x.shape();
  be.avg_pool(win, x.ptr(), y.ptr());
  record_op({x}, y, [win, in_shape](const Tensor& g, const std::vector<bool>&) {
    Tensor dx = Tensor::empty(in_shape, g.device());
    backend_for(g.device()).avg_pool_backward(win, g.ptr(), dx.ptr());
    return std::vector<Tensor>{dx};
  });
  return y;
}

LayerPtr MaxPool2D(int64_t pool_size, int64_t strides, Padding padding) {
  const int64_t s = strides > 0 ? strides : pool_size;
  return std::make_shared<Pool2DLayer>(Pool2DLayer::Kind::Max, pool_size, pool_size, s, s, padding);
}

LayerPtr AveragePool2D(int64_t pool_size, int64_t strides, Padding padding) {
  const int64_t s = strides > 0 ? strides : pool_size;
  return std::make_shared<Pool2DLayer>(Pool2DLayer::Kind::Average, pool_size, pool_size, s, s, padding);
}

LayerPtr GlobalAveragePooling2D() {
  return std::make_shared<Pool2DLayer>(Pool2DLayer::Kind::GlobalAverage, 0, 0, 1, 1, Padding::Valid);
}

}  // namespace strata::nn
