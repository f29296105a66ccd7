#pragma once
#include <functional>

#include "backend/Backend.h"
#include "core/Tensor.h"

namespace strata::nn {

// y = act(x w + b) for x (rows, k), w (k, n), b (n) or undefined, as one
// recorded op: the shared core of Dense and of Conv2D (which feeds it the
// im2col patch matrix). The backward computes only the gradients needed.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, Activation act);

// y = act(conv(x, w) + b) for NHWC x and the kernel as a (patch, filters)
// matrix, through the backend's own convolution (Backend::has_conv2d): y is
// (rows, filters), as linear() gives it for the patch matrix.
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, Activation act, const Window2D& win);

// What linear() and conv2d() share: a product P(x, w) of shape (rows, out)
// with its two adjoints, followed by the bias and the activation. A forward
// that adds the bias itself (`forward_adds_bias`: the dense product, whose
// GPU epilogue does) is given it; otherwise it is given null and the bias
// is added after.
struct Product {
  int64_t rows = 0, out = 0;
  bool forward_adds_bias = false;
  std::function<void(Backend&, const Tensor& x, const Tensor& w, const float* bias, float* y)> forward;
  std::function<void(Backend&, const Tensor& dy, const Tensor& w, float* dx)> backward_data;
  std::function<void(Backend&, const Tensor& x, const Tensor& dy, float* dw)> backward_weights;
};
Tensor product_op(const Tensor& x, const Tensor& w, const Tensor& b, Activation act, Product p);

}  // namespace strata::nn
