#include "nn/Conv2D.h"

#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "nn/Dense.h"
#include "nn/Flatten.h"
#include "nn/GradientTape.h"
#include "nn/Initializers.h"
#include "nn/LinearOp.h"
#include "nn/Pool2D.h"

namespace strata::nn {

Conv2DLayer::Conv2DLayer(int64_t filters, int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                         Padding padding, Activation activation, bool use_bias)
    : filters_(filters), kh_(kernel_h), kw_(kernel_w), sh_(stride_h), sw_(stride_w), padding_(padding),
      activation_(activation), use_bias_(use_bias) {
  if (filters <= 0 || kernel_h <= 0 || kernel_w <= 0 || stride_h <= 0 || stride_w <= 0)
    throw bad_input("Conv2D: filters, kernel size and strides must be positive");
  if (activation == Activation::Softmax) throw bad_input("Conv2D: softmax activation is not supported (use a Softmax layer)");
}

Shape Conv2DLayer::output_shape(const Shape& input) const {
  Window2D w = make_window(input, 1, kh_, kw_, sh_, sw_, padding_, "Conv2D");
  return Shape{w.out_h, w.out_w, filters_};
}

Json Conv2DLayer::config() const {
  Json j = {{"type", "conv2d"},        {"filters", filters_}, {"kernel_size", {kh_, kw_}}, {"strides", {sh_, sw_}},
            {"padding", padding_name(padding_)}, {"activation", activation_name(activation_)}};
  if (!use_bias_) j["use_bias"] = false;
  return j;
}

void Conv2DLayer::create_variables(const Shape& input) {
  output_shape(input);
  const int64_t in = input[2];
  // Keras' fans for a conv kernel: receptive field times channels.
  kernel_ = add_variable("kernel", glorot_uniform(Shape{kh_, kw_, in, filters_}, kh_ * kw_ * in, kh_ * kw_ * filters_, seed()));
  if (use_bias_) bias_ = add_variable("bias", Tensor::zeros(Shape{filters_}));
}

Tensor Conv2DLayer::call(const Tensor& x, bool) { return convolve(x, true); }

std::optional<Tensor> Conv2DLayer::call_with_next(const Layer& next, const Tensor& x, bool) {
  // max(relu(z + b)) = relu(max(z + b)), and the winner of every window
  // whose maximum is positive is the same pixel, so the bias and relu can
  // follow the pooling, on a quarter of the pixels (2x2): the full-size
  // bias and relu passes and their gradients' passes are not made. Exact for
  // relu (and none); other activations keep their order.
  const auto* pool = dynamic_cast<const Pool2DLayer*>(&next);
  if (!pool || !pool->is_max() || (activation_ != Activation::None && activation_ != Activation::Relu)) return std::nullopt;
  return pool->call_max(convolve(x, false), use_bias_ ? bias_->value() : Tensor(), activation_);
}

Tensor Conv2DLayer::convolve(const Tensor& x, bool with_bias_and_activation) {
  if (x.shape().rank() != 4)
    throw bad_input("Conv2D expects (batch, height, width, channels), got " + x.shape().str());
  const Shape hwc{x.shape()[1], x.shape()[2], x.shape()[3]};
  if (hwc[2] != kernel_->shape()[2])
    throw bad_input("Conv2D: input has " + std::to_string(hwc[2]) + " channels, kernel expects " + std::to_string(kernel_->shape()[2]));
  const Window2D win = make_window(hwc, x.shape()[0], kh_, kw_, sh_, sw_, padding_, "Conv2D");
  const int64_t rows = win.batch * win.out_h * win.out_w;
  const int64_t patch = kh_ * kw_ * hwc[2];
  // Convolution = patch matrix (im2col) times the kernel as a (patch, filters)
  // matrix: the same fused op as Dense. A 1x1 stride-1 convolution needs no
  // patch matrix: the image already is one.
  // Where the backend convolves in one operation (cuDNN), it does.
  const bool direct = kh_ == 1 && kw_ == 1 && sh_ == 1 && sw_ == 1;
  Tensor w = reshape_op(kernel_->value(), Shape{patch, filters_});
  const Tensor b = use_bias_ && with_bias_and_activation ? bias_->value() : Tensor();
  const Activation act = with_bias_and_activation ? activation_ : Activation::None;
  Tensor y = !direct && backend_for(x.device()).has_conv2d(win, filters_)
                 ? conv2d(x, w, b, act, win)
                 : linear(direct ? reshape_op(x, Shape{rows, patch}) : im2col_op(x, win), w, b, act);
  return reshape_op(y, Shape{win.batch, win.out_h, win.out_w, filters_});
}

Tensor im2col_op(const Tensor& x, const Window2D& win) {
  const int64_t patch = win.kernel_h * win.kernel_w * win.channels;
  Tensor col = Tensor::empty(Shape{win.batch * win.out_h * win.out_w, patch}, x.device());
  backend_for(x.device()).im2col(win, x.ptr(), col.ptr());
  const Shape in_shape = x.shape();
  record_op({x}, col, [win, in_shape](const Tensor& g, const std::vector<bool>&) {
    Tensor dx = Tensor::empty(in_shape, g.device());
    backend_for(g.device()).col2im(win, g.ptr(), dx.ptr());
    return std::vector<Tensor>{dx};
  });
  return col;
}

LayerPtr Conv2D(int64_t filters, int64_t kernel_size, Activation activation, Padding padding, int64_t strides) {
  return std::make_shared<Conv2DLayer>(filters, kernel_size, kernel_size, strides, strides, padding, activation);
}

}  // namespace strata::nn
