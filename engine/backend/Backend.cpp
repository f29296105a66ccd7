// Backend's defaults for the fused operations: the product with its bias,
// and the convolution as the patch matrix and a product, on the backend
// itself (what a library-less device does; the reference cuDNN's results
// are checked against).
#include "backend/Backend.h"

#include <algorithm>

#include "core/Error.h"
#include "core/Tensor.h"

namespace strata {

namespace {
int64_t patch_size(const Window2D& w) { return w.kernel_h * w.kernel_w * w.channels; }
int64_t out_rows(const Window2D& w) { return w.batch * w.out_h * w.out_w; }
Tensor patch_matrix(const Window2D& w, const Device& device) { return Tensor::empty(Shape{out_rows(w), patch_size(w)}, device); }
}  // namespace

void require_pool_activation(Activation act) {
  if (act != Activation::None && act != Activation::Relu)
    throw bad_input("max pooling takes no activation or relu after it (a monotonic one), not another");
}

void Backend::gather_step_stats(const float* loss, const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                float* error, float* stats) {
  fill32(stats, 4, 0);
  copy(stats, loss, sizeof(float));
  if (labels && rows > 0) count_correct(logits, labels, rows, cols, stats + 1);
  if (error) {
    copy(stats + 2, error, 2 * sizeof(float));
    fill32(error, 2, 0);
  }
}

void Backend::gather_examples(const uint8_t* pixels, int64_t row_bytes, const int32_t* labels, const int32_t* rows, int64_t n,
                              float scale, const float* mean, const float* inv_std, float* features, int32_t* labels_out) {
  Tensor bytes = Tensor::empty(Shape{n, row_bytes}, DType::UInt8, device());
  gather_rows(pixels, row_bytes, rows, n, bytes.byte_ptr());
  pixels_to_float(n, row_bytes, bytes.byte_ptr(), scale, mean, inv_std, features);
  gather_rows(reinterpret_cast<const uint8_t*>(labels), sizeof(int32_t), rows, n, reinterpret_cast<uint8_t*>(labels_out));
}

void Backend::bias_activation_backward(Activation act, const float* y, const float* dy, float* dx, float* dbias, int64_t rows,
                                       int64_t cols) {
  activation_backward(act, y, dy, dx, rows, cols);
  sum_rows(dx, rows, cols, dbias, false);
}

void Backend::sparse_softmax_xent_average(const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                          const float* scale, float* error, float* loss, float* dlogits, float* total) {
  if (error) check_labels(labels, rows, cols, error);
  sparse_softmax_xent(logits, labels, rows, cols, loss, dlogits);
  scaled_sum(rows, loss, scale, total);
  scale_rows(dlogits, scale, 1, rows * cols, dlogits);
}

void Backend::batch_norm_apply_relu(const float* x, int64_t rows, int64_t channels, const float* mean, const float* inv_std,
                                    const float* gamma, const float* beta, float* y) {
  batch_norm_apply(x, rows, channels, mean, inv_std, gamma, beta, y);
  activation_forward(Activation::Relu, y, y, rows, channels);
}

void Backend::gemm_bias(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                        const float* bias, float* c) {
  gemm(trans_a, trans_b, m, n, k, 1.0f, a, b, 0.0f, c);
  if (bias) add_bias_rows(c, bias, m, n);
}

void Backend::conv2d(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) {
  conv2d_im2col(w, filters, x, kernel, y, w.batch);
}

Tensor Backend::conv2d_keeping_patches(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) {
  conv2d(w, filters, x, kernel, y);
  return Tensor();
}

void Backend::conv2d_backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx) {
  conv2d_backward_data_im2col(w, filters, dy, kernel, dx, w.batch);
}

void Backend::conv2d_backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy,
                                     float* dkernel) {
  conv2d_backward_filter_im2col(w, filters, x, dy, dkernel, w.batch);
}

// Slices of `images` images: each slice's patch matrix is made, used and
// made again over the same memory for the next (`col`, sized for the first
// slice). An empty batch is one empty slice, so the outputs are still
// written (the filter gradient as zeros).
namespace {
template <typename Slice>
void for_slices(const Window2D& w, int64_t images, const Device& device, Slice&& slice) {
  const int64_t step = std::max<int64_t>(1, images);
  Window2D first = w;
  first.batch = std::min(step, w.batch);
  Tensor col = patch_matrix(first, device);
  for (int64_t n0 = 0; n0 == 0 || n0 < w.batch; n0 += step) {
    Window2D part = w;
    part.batch = std::min(step, w.batch - n0);
    slice(part, n0, col.ptr());
  }
}
int64_t image_size(const Window2D& w) { return w.height * w.width * w.channels; }
int64_t out_pixels(const Window2D& w) { return w.out_h * w.out_w; }
}  // namespace

void Backend::conv2d_im2col(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y,
                            int64_t images) {
  for_slices(w, images, device(), [&](const Window2D& part, int64_t n0, float* col) {
    im2col(part, x + n0 * image_size(w), col);
    gemm(false, false, out_rows(part), filters, patch_size(w), 1.0f, col, kernel, 0.0f, y + n0 * out_pixels(w) * filters);
  });
}

Tensor Backend::conv2d_im2col_kept(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) {
  if (out_rows(w) * patch_size(w) * static_cast<int64_t>(sizeof(float)) > kKeptPatchesBytes) {
    conv2d_im2col(w, filters, x, kernel, y, w.batch);
    return Tensor();
  }
  Tensor col = patch_matrix(w, device());
  im2col(w, x, col.ptr());
  gemm(false, false, out_rows(w), filters, patch_size(w), 1.0f, col.ptr(), kernel, 0.0f, y);
  return col;
}

void Backend::conv2d_backward_data_im2col(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx,
                                          int64_t images) {
  for_slices(w, images, device(), [&](const Window2D& part, int64_t n0, float* dcol) {
    gemm(false, true, out_rows(part), patch_size(w), filters, 1.0f, dy + n0 * out_pixels(w) * filters, kernel, 0.0f, dcol);
    col2im(part, dcol, dx + n0 * image_size(w));
  });
}

void Backend::conv2d_backward_filter_im2col(const Window2D& w, int64_t filters, const float* x, const float* dy,
                                            float* dkernel, int64_t images) {
  // The slices' products add up in order, the first overwriting: the same
  // bits on every run.
  for_slices(w, images, device(), [&](const Window2D& part, int64_t n0, float* col) {
    im2col(part, x + n0 * image_size(w), col);
    gemm(true, false, patch_size(w), filters, out_rows(part), 1.0f, col, dy + n0 * out_pixels(w) * filters,
         n0 == 0 ? 0.0f : 1.0f, dkernel);
  });
}

}  // namespace strata
