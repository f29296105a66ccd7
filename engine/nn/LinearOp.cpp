#include "nn/LinearOp.h"

#include <memory>
#include <optional>

#include "nn/GradientTape.h"

namespace strata::nn {

Tensor product_op(const Tensor& x, const Tensor& w, const Tensor& b, Activation act, Product p) {
  const int64_t rows = p.rows, out = p.out;
  Backend& be = backend_for(x.device());
  Tensor y = Tensor::empty(Shape{rows, out}, x.device());
  const bool has_bias = b.defined();
  p.forward(be, x, w, has_bias && p.forward_adds_bias ? b.ptr() : nullptr, y.ptr());
  be.bias_activation(act, y.ptr(), has_bias && !p.forward_adds_bias ? b.ptr() : nullptr, rows, out);

  std::vector<Tensor> inputs{x, w};
  if (has_bias) inputs.push_back(b);
  record_op(std::move(inputs), y, [x, w, y, act, has_bias, p = std::move(p)](const Tensor& g, const std::vector<bool>& need) {
    Backend& bk = backend_for(g.device());
    std::vector<Tensor> grads(has_bias ? 3 : 2);
    const bool bias_gradient = has_bias && need[2];
    if (bias_gradient) grads[2] = Tensor::empty(Shape{p.out}, g.device());
    // Through the activation, and where there is one, the bias's gradient in
    // the same pass (Backend::bias_activation_backward).
    Tensor dz = g;
    if (act != Activation::None) {
      dz = Tensor::empty(g.shape(), g.device());
      if (bias_gradient) bk.bias_activation_backward(act, y.ptr(), g.ptr(), dz.ptr(), grads[2].ptr(), p.rows, p.out);
      else bk.activation_backward(act, y.ptr(), g.ptr(), dz.ptr(), p.rows, p.out);
    }
    // The weights' (and without an activation the bias's) gradients on a
    // side branch of the device's work, beside the input's
    // (Backend::begin_branch), where there are both; joined before the
    // gradients are handed on. x, dz and w outlive the join.
    std::optional<SideBranch> branch;
    if (need[0] && (need[1] || (bias_gradient && act == Activation::None))) branch.emplace(bk);
    if (need[1]) {
      grads[1] = Tensor::empty(w.shape(), g.device());
      p.backward_weights(bk, x, dz, grads[1].ptr());
    }
    if (bias_gradient && act == Activation::None) bk.sum_rows(dz.ptr(), p.rows, p.out, grads[2].ptr(), false);
    if (branch) branch->end();
    if (need[0]) {
      grads[0] = Tensor::empty(x.shape(), g.device());
      p.backward_data(bk, dz, w, grads[0].ptr());
    }
    return grads;
  });
  return y;
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, Activation act) {
  const int64_t rows = x.shape()[0], in = x.shape()[1], out = w.shape()[1];
  Product p;
  p.rows = rows;
  p.out = out;
  p.forward_adds_bias = true;
  p.forward = [=](Backend& be, const Tensor& input, const Tensor& weights, const float* bias, float* y) {
    be.gemm_bias(false, false, rows, out, in, input.ptr(), weights.ptr(), bias, y);
  };
  p.backward_data = [=](Backend& be, const Tensor& dy, const Tensor& weights, float* dx) {
    be.gemm(false, true, rows, in, out, 1.0f, dy.ptr(), weights.ptr(), 0.0f, dx);
  };
  p.backward_weights = [=](Backend& be, const Tensor& input, const Tensor& dy, float* dw) {
    be.gemm(true, false, in, out, rows, 1.0f, input.ptr(), dy.ptr(), 0.0f, dw);
  };
  return product_op(x, w, b, act, std::move(p));
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, Activation act, const Window2D& win) {
  const int64_t filters = w.shape()[1], patch = w.shape()[0];
  Product p;
  p.rows = win.batch * win.out_h * win.out_w;
  p.out = filters;
  // The patch matrix the forward pass made, where it made one: the kernel
  // gradient's product takes it instead of making it again, then lets it go.
  auto patches = std::make_shared<Tensor>();
  p.forward = [=](Backend& be, const Tensor& input, const Tensor& weights, const float* /*bias*/, float* y) {
    *patches = be.conv2d_keeping_patches(win, filters, input.ptr(), weights.ptr(), y);
  };
  p.backward_data = [=](Backend& be, const Tensor& dy, const Tensor& weights, float* dx) {
    be.conv2d_backward_data(win, filters, dy.ptr(), weights.ptr(), dx);
  };
  p.backward_weights = [=, rows = p.rows](Backend& be, const Tensor& input, const Tensor& dy, float* dw) {
    if (!patches->defined()) return be.conv2d_backward_filter(win, filters, input.ptr(), dy.ptr(), dw);
    be.gemm(true, false, patch, filters, rows, 1.0f, patches->ptr(), dy.ptr(), 0.0f, dw);
    *patches = Tensor();
  };
  return product_op(x, w, b, act, std::move(p));
}

}  // namespace strata::nn
