#include "nn/LinearOp.h"

#include "nn/GradientTape.h"

namespace strata::nn {

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, Activation act) {
  const int64_t rows = x.shape()[0], in = x.shape()[1], out = w.shape()[1];
  Backend& be = backend_for(x.device());
  Tensor y = Tensor::empty(Shape{rows, out}, x.device());
  be.gemm(false, false, rows, out, in, 1.0f, x.ptr(), w.ptr(), 0.0f, y.ptr());
  const bool has_bias = b.defined();
  if (has_bias) be.add_bias_rows(y.ptr(), b.ptr(), rows, out);
  if (act != Activation::None) be.activation_forward(act, y.ptr(), y.ptr(), rows, out);

  std::vector<Tensor> inputs{x, w};
  if (has_bias) inputs.push_back(b);
  record_op(std::move(inputs), y, [x, w, y, act, has_bias, rows, in, out](const Tensor& g, const std::vector<bool>& need) {
    Backend& bk = backend_for(g.device());
    Tensor dz = g;
    if (act != Activation::None) {
      dz = Tensor::empty(g.shape(), g.device());
      bk.activation_backward(act, y.ptr(), g.ptr(), dz.ptr(), rows, out);
    }
    std::vector<Tensor> grads(has_bias ? 3 : 2);
    if (need[0]) {
      grads[0] = Tensor::empty(x.shape(), g.device());
      bk.gemm(false, true, rows, in, out, 1.0f, dz.ptr(), w.ptr(), 0.0f, grads[0].ptr());
    }
    if (need[1]) {
      grads[1] = Tensor::empty(w.shape(), g.device());
      bk.gemm(true, false, in, out, rows, 1.0f, x.ptr(), dz.ptr(), 0.0f, grads[1].ptr());
    }
    if (has_bias && need[2]) {
      grads[2] = Tensor::empty(Shape{out}, g.device());
      bk.sum_rows(dz.ptr(), rows, out, grads[2].ptr(), false);
    }
    return grads;
  });
  return y;
}

}  // namespace strata::nn
