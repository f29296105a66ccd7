#include "nn/LinearOp.h"

#include "nn/GradientTape.h"

namespace strata::nn {

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, Activation act) {
  const int64_t rows = x.shape()[0], in = x.shape()[1], out = w.shape()[1];
  Backend& be = backend_for(x.device());
  Tensor y = Tensor::empty(Shape{rows, out});
  be.gemm(false, false, rows, out, in, 1.0f, x.data(), w.data(), 0.0f, y.data());
  const bool has_bias = b.defined();
  if (has_bias) be.add_bias_rows(y.data(), b.data(), rows, out);
  if (act != Activation::None) be.activation_forward(act, y.data(), y.data(), rows, out);

  std::vector<Tensor> inputs{x, w};
  if (has_bias) inputs.push_back(b);
  record_op(std::move(inputs), y, [x, w, y, act, has_bias, rows, in, out](const Tensor& g, const std::vector<bool>& need) {
    Backend& bk = backend_for(g.device());
    Tensor dz = g;
    if (act != Activation::None) {
      dz = Tensor::empty(g.shape());
      bk.activation_backward(act, y.data(), g.data(), dz.data(), rows, out);
    }
    std::vector<Tensor> grads(has_bias ? 3 : 2);
    if (need[0]) {
      grads[0] = Tensor::empty(x.shape());
      bk.gemm(false, true, rows, in, out, 1.0f, dz.data(), w.data(), 0.0f, grads[0].data());
    }
    if (need[1]) {
      grads[1] = Tensor::empty(w.shape());
      bk.gemm(true, false, in, out, rows, 1.0f, x.data(), dz.data(), 0.0f, grads[1].data());
    }
    if (has_bias && need[2]) {
      grads[2] = Tensor::empty(Shape{out});
      bk.sum_rows(dz.data(), rows, out, grads[2].data(), false);
    }
    return grads;
  });
  return y;
}

}  // namespace strata::nn
