#pragma once
#include "backend/Backend.h"
#include "core/Tensor.h"

namespace strata::nn {

// y = act(x w + b) for x (rows, k), w (k, n), b (n) or undefined, as one
// recorded op: the shared core of Dense and of Conv2D (which feeds it the
// im2col patch matrix). The backward computes only the gradients needed.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, Activation act);

}  // namespace strata::nn
