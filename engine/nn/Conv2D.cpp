#include "nn/Conv2D.h"

#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "nn/Dense.h"
#include "nn/GradientTape.h"
#include "nn/Initializers.h"

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

Tensor Conv2DLayer::call(const Tensor& x, bool) {
  if (x.shape().rank() != 4)
    throw bad_input("Conv2D expects (batch, height, width, channels), got " + x.shape().str());
  const Shape hwc{x.shape()[1], x.shape()[2], x.shape()[3]};
  if (hwc[2] != kernel_->shape()[2])
    throw bad_input("Conv2D: input has " + std::to_string(hwc[2]) + " channels, kernel expects " + std::to_string(kernel_->shape()[2]));
  const Window2D win = make_window(hwc, x.shape()[0], kh_, kw_, sh_, sw_, padding_, "Conv2D");
  const int64_t rows = win.batch * win.out_h * win.out_w;
  const int64_t patch = kh_ * kw_ * hwc[2];
  Backend& be = backend_for(x.device());

  // A 1x1 stride-1 convolution needs no patch matrix: the image is one.
  const bool direct = kh_ == 1 && kw_ == 1 && sh_ == 1 && sw_ == 1;
  Tensor col = direct ? x : Tensor::empty(Shape{rows, patch});
  if (!direct) be.im2col(win, x.data(), col.data());
  Tensor w = kernel_->value();
  Tensor y = Tensor::empty(Shape{win.batch, win.out_h, win.out_w, filters_});
  be.gemm(false, false, rows, filters_, patch, 1.0f, col.data(), w.data(), 0.0f, y.data());
  Tensor b;
  if (use_bias_) {
    b = bias_->value();
    be.add_bias_rows(y.data(), b.data(), rows, filters_);
  }
  if (activation_ != Activation::None) be.activation_forward(activation_, y.data(), y.data(), rows, filters_);

  std::vector<Tensor> inputs{x, w};
  if (use_bias_) inputs.push_back(b);
  const Activation act = activation_;
  const bool has_bias = use_bias_;
  const int64_t filters = filters_;
  record_op(std::move(inputs), y,
            [x, w, y, col, win, rows, patch, filters, act, has_bias, direct](const Tensor& g, const std::vector<bool>& need) {
              Backend& bk = backend_for(g.device());
              Tensor dz = g;
              if (act != Activation::None) {
                dz = Tensor::empty(g.shape());
                bk.activation_backward(act, y.data(), g.data(), dz.data(), rows, filters);
              }
              std::vector<Tensor> grads(has_bias ? 3 : 2);
              if (need[0]) {
                grads[0] = Tensor::empty(x.shape());
                if (direct) {
                  bk.gemm(false, true, rows, patch, filters, 1.0f, dz.data(), w.data(), 0.0f, grads[0].data());
                } else {
                  Tensor dcol = Tensor::empty(Shape{rows, patch});
                  bk.gemm(false, true, rows, patch, filters, 1.0f, dz.data(), w.data(), 0.0f, dcol.data());
                  bk.col2im(win, dcol.data(), grads[0].data());
                }
              }
              if (need[1]) {
                grads[1] = Tensor::empty(w.shape());
                bk.gemm(true, false, patch, filters, rows, 1.0f, col.data(), dz.data(), 0.0f, grads[1].data());
              }
              if (has_bias && need[2]) {
                grads[2] = Tensor::empty(Shape{filters});
                bk.sum_rows(dz.data(), rows, filters, grads[2].data(), false);
              }
              return grads;
            });
  return y;
}

LayerPtr Conv2D(int64_t filters, int64_t kernel_size, Activation activation, Padding padding, int64_t strides) {
  return std::make_shared<Conv2DLayer>(filters, kernel_size, kernel_size, strides, strides, padding, activation);
}

}  // namespace strata::nn
