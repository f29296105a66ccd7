#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "backend/Backend.h"

namespace strata::cuda {

// A convolution through cuDNN in one tensor layout, whichever of cuDNN's APIs
// runs it (CudnnConvolution: the legacy algorithms; CudnnGraphConvolution:
// the backend API's engines). CudaBackend races them against each other and
// against im2col per shape and direction (ConvolutionWays), transposing the
// layers' NHWC images and (kh * kw * channels, filters) kernels to the layout.
class CudnnConvolver {
public:
  using Direction = Backend::ConvolutionDirection;
  virtual ~CudnnConvolver() = default;
  // Whether this way takes the window's direction: cuDNN can express it and
  // a plan can be made for it (made here, once per shape, so a shape or a
  // direction cuDNN refuses goes the other ways instead of failing the
  // step), with room for its workspace now.
  virtual bool takes(const Window2D& w, int64_t filters, Direction d) = 0;
  // Each returns false, having done nothing, when cuDNN refuses the call
  // (not supported, bad parameter): the caller takes another way, as PyTorch
  // moves on to the next algorithm. Other failures throw.
  virtual bool forward(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) = 0;
  virtual bool backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx) = 0;
  virtual bool backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy, float* dkernel) = 0;
};

// "<device>: convolution 5x5 over 64x28x28x1 in NHWC": how both ways name a
// shape in their messages.
inline std::string describe_cudnn_convolution(const std::string& device, const Window2D& w, const char* layout) {
  return device + ": convolution " + std::to_string(w.kernel_h) + "x" + std::to_string(w.kernel_w) + " over " +
         std::to_string(w.batch) + "x" + std::to_string(w.height) + "x" + std::to_string(w.width) + "x" +
         std::to_string(w.channels) + " in " + layout;
}

// A shape's key in the cuDNN ways' plan caches, its output size included:
// "valid" and "same" windows (3x3 stride 2 on an even size) share pad_top 0.
using CudnnKey = std::array<int64_t, 13>;
inline CudnnKey cudnn_key(const Window2D& w, int64_t filters) {
  return CudnnKey{w.batch,    w.height,  w.width,    w.channels, w.kernel_h, w.kernel_w, w.stride_h,
                  w.stride_w, w.pad_top, w.pad_left, filters,    w.out_h,    w.out_w};
}

}  // namespace strata::cuda
