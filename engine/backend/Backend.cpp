// Backend's defaults for the fused operations: the product with its bias,
// and the convolution as the patch matrix and a product, on the backend
// itself (what a library-less device does; the reference cuDNN's results
// are checked against).
#include "backend/Backend.h"

#include "core/Tensor.h"

namespace strata {

namespace {
int64_t patch_size(const Window2D& w) { return w.kernel_h * w.kernel_w * w.channels; }
int64_t out_rows(const Window2D& w) { return w.batch * w.out_h * w.out_w; }
Tensor patch_matrix(const Window2D& w, const Device& device) { return Tensor::empty(Shape{out_rows(w), patch_size(w)}, device); }
}  // namespace

void Backend::gemm_bias(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                        const float* bias, float* c) {
  gemm(trans_a, trans_b, m, n, k, 1.0f, a, b, 0.0f, c);
  if (bias) add_bias_rows(c, bias, m, n);
}

void Backend::conv2d(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) {
  Tensor col = patch_matrix(w, device());
  im2col(w, x, col.ptr());
  gemm(false, false, out_rows(w), filters, patch_size(w), 1.0f, col.ptr(), kernel, 0.0f, y);
}

void Backend::conv2d_backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx) {
  Tensor dcol = patch_matrix(w, device());
  gemm(false, true, out_rows(w), patch_size(w), filters, 1.0f, dy, kernel, 0.0f, dcol.ptr());
  col2im(w, dcol.ptr(), dx);
}

void Backend::conv2d_backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy,
                                     float* dkernel) {
  Tensor col = patch_matrix(w, device());
  im2col(w, x, col.ptr());
  gemm(true, false, patch_size(w), filters, out_rows(w), 1.0f, col.ptr(), dy, 0.0f, dkernel);
}

}  // namespace strata
