#pragma once
// Convolutions on the CPU through oneDNN (the library PyTorch convolves with
// on the CPU): forward, backward data and backward filter of an NHWC image
// with an HWIO kernel, as Backend::conv2d defines them. Its JIT kernels
// convolve directly, without the patch matrix im2col + gemm builds (25x the
// image for a 5x5 kernel).
//
// Threads: the backend's own pool splits the batch and every thread runs a
// one-thread primitive on its slice. oneDNN's OpenMP teams are not used: their
// threads spin after each call (libgomp's default wait policy) and took the
// cores from the pool's next kernels, costing a third of the throughput on
// two cores. The filter gradient is summed over the slices in slice order, so
// results depend only on the thread count, as the other kernels'.
#include <memory>

#include "backend/Backend.h"
#include "core/ThreadPool.h"

namespace strata {

class DnnlConvolution {
public:
  explicit DnnlConvolution(ThreadPool& pool);
  ~DnnlConvolution();
  // oneDNN takes explicit padding on both sides; a window whose last rows or
  // columns of input are never read (a negative far padding) stays with
  // im2col + gemm.
  static bool supports(const Window2D& w);
  void forward(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y);
  void backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx);
  void backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy, float* dkernel);

  struct Impl;  // oneDNN's types stay out of this header

private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
