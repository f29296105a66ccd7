#pragma once
// The element-wise activations and their gradients as device functions,
// shared by the kernels that apply them alone (CudaKernels.cu) and those
// that fold them into another pass (the bias gradient's reduction,
// CudaChannelReductions.cu), so every kernel rounds them alike.
#include <cuda_runtime.h>

#include "backend/Backend.h"

namespace strata::cuda {

__device__ inline float activate(Activation act, float v) {
  switch (act) {
    // std::max(v, 0) like the CPU's Eigen max: a NaN (and -0) passes through,
    // where fmaxf would turn a NaN into 0.
    case Activation::Relu: return v < 0.0f ? 0.0f : v;
    case Activation::Tanh: return tanhf(v);
    case Activation::Sigmoid: return 1.0f / (1.0f + expf(-v));
    default: return v;
  }
}

// dy * act'(.) from the activation's output y (softmax is per row: not here).
__device__ inline float activation_gradient(Activation act, float y, float dy) {
  switch (act) {
    case Activation::Relu: return y > 0.0f ? dy : 0.0f;
    case Activation::Tanh: return dy * (1.0f - y * y);
    case Activation::Sigmoid: return dy * y * (1.0f - y);
    default: return dy;
  }
}

}  // namespace strata::cuda
