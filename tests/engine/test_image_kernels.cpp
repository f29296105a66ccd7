// The CPU backend's image (NHWC) and batch-norm kernels (CpuImageKernels.cpp)
// and its default convolution (Backend.cpp: im2col + gemm) against naive
// direct loops (in double) on fresh random inputs, with 1 and 2 threads,
// outputs poisoned with NaN first. Sizes are above each kernel's parallel
// grain, so two threads really split the work; where a kernel promises
// results independent of the thread count, 1 and 2 threads are compared bit
// for bit.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "TestUtil.h"
#include "WindowCase.h"
#include "backend/cpu/CpuBackend.h"
#include "core/Error.h"

using namespace strata;
using testutil::compare;
using testutil::identical;
using testutil::make_case_window;
using testutil::nan_vector;
using testutil::random_vector;
using testutil::WindowCase;

namespace {

// Parallel grains of CpuImageKernels.cpp: what a kernel splits, and the least
// of it per thread. A case splits across two threads when it has at least
// twice the grain. channel_sums and backward_reduce always split, by rows.
constexpr int64_t kIm2colGrain = 64;  // im2col: patch rows (batch * out_h * out_w)
constexpr int64_t kPoolGrain = 4;     // max_pool, avg_pool: output rows (batch * out_h)
constexpr int64_t kImageGrain = 1;    // col2im and the pooling backward passes: images
// batch_norm_apply and backward_apply: rows, kBatchNormWork / channels of them per thread.
constexpr int64_t kBatchNormWork = 1 << 15;

// Odd and even sizes, 1 to 8 channels, strides 1 and 2 (also unequal), TF's
// "valid" and "same" (the odd pixel after) and symmetric explicit padding (as
// PyTorch's padding=1), where windows stick out on both sides.
const WindowCase kWindows[] = {
    {"3x3 s1 same", 3, 17, 13, 5, 3, 3, 1, 1, WindowCase::Same},
    {"3x3 s2 same, even size (padding only after)", 3, 16, 12, 3, 3, 3, 2, 2, WindowCase::Same},
    {"2x2 s2 valid, odd size (last row and column unused)", 4, 15, 11, 8, 2, 2, 2, 2, WindowCase::Valid},
    {"5x5 s1 same, 1 channel", 2, 28, 28, 1, 5, 5, 1, 1, WindowCase::Same},
    {"3x2 kernel, strides 2x1, same", 3, 11, 10, 4, 3, 2, 2, 1, WindowCase::Same},
    {"4x4 s2, explicit padding 1,1", 3, 20, 17, 3, 4, 4, 2, 2, WindowCase::Explicit, 1, 1},
    {"1x1 s2 valid", 3, 15, 13, 6, 1, 1, 2, 2, WindowCase::Valid},
    {"3x3 s2 valid", 2, 19, 21, 2, 3, 3, 2, 2, WindowCase::Valid},
    // Stride 1 with every kind of padding: the CPU's forward convolution may
    // run these as the backward-data pass of their transpose (DnnlConvolution).
    {"3x3 s1 valid", 3, 9, 11, 4, 3, 3, 1, 1, WindowCase::Valid},
    {"4x2 kernel s1 same (more padding after)", 2, 10, 9, 3, 4, 2, 1, 1, WindowCase::Same},
    {"2x2 s1, explicit padding 1", 2, 8, 9, 5, 2, 2, 1, 1, WindowCase::Explicit, 1, 1},
    {"1x1 s1 (pointwise)", 3, 8, 9, 6, 1, 1, 1, 1, WindowCase::Valid},
    // Windows that tile the image exactly: every pixel in exactly one window (the CNNs' pooling).
    {"2x2 s2 valid, even size (the windows tile the image)", 3, 16, 12, 8, 2, 2, 2, 2, WindowCase::Valid},
    {"3x2 kernel, strides 3x2, valid, tiling", 4, 18, 20, 5, 3, 2, 3, 2, WindowCase::Valid},
};

int64_t image_size(const Window2D& w) { return w.batch * w.height * w.width * w.channels; }
int64_t out_rows(const Window2D& w) { return w.batch * w.out_h * w.out_w; }
int64_t patch_size(const Window2D& w) { return w.kernel_h * w.kernel_w * w.channels; }
size_t pixel(const Window2D& w, int64_t n, int64_t y, int64_t x, int64_t c) {
  return static_cast<size_t>(((n * w.height + y) * w.width + x) * w.channels + c);
}
size_t out_index(const Window2D& w, int64_t n, int64_t oy, int64_t ox, int64_t c) {
  return static_cast<size_t>(((n * w.out_h + oy) * w.out_w + ox) * w.channels + c);
}

// Calls fn(ky, kx, iy, ix, inside) for every element of window (oy, ox).
template <typename Fn>
void each_window_pixel(const Window2D& w, int64_t oy, int64_t ox, Fn fn) {
  for (int64_t ky = 0; ky < w.kernel_h; ++ky)
    for (int64_t kx = 0; kx < w.kernel_w; ++kx) {
      const int64_t iy = oy * w.stride_h - w.pad_top + ky, ix = ox * w.stride_w - w.pad_left + kx;
      fn(ky, kx, iy, ix, iy >= 0 && iy < w.height && ix >= 0 && ix < w.width);
    }
}

// col[(n, oy, ox), (ky, kx, c)]: the input pixel, or 0 in the padding.
std::vector<float> ref_im2col(const Window2D& w, const std::vector<float>& x) {
  std::vector<float> col(static_cast<size_t>(out_rows(w) * patch_size(w)));
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oy = 0; oy < w.out_h; ++oy)
      for (int64_t ox = 0; ox < w.out_w; ++ox) {
        const int64_t row = (n * w.out_h + oy) * w.out_w + ox;
        each_window_pixel(w, oy, ox, [&](int64_t ky, int64_t kx, int64_t iy, int64_t ix, bool inside) {
          for (int64_t c = 0; c < w.channels; ++c)
            col[static_cast<size_t>(row * patch_size(w) + (ky * w.kernel_w + kx) * w.channels + c)] =
                inside ? x[pixel(w, n, iy, ix, c)] : 0.0f;
        });
      }
  return col;
}

// The adjoint: every patch element added into its pixel.
std::vector<double> ref_col2im(const Window2D& w, const std::vector<float>& col) {
  std::vector<double> dx(static_cast<size_t>(image_size(w)), 0.0);
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oy = 0; oy < w.out_h; ++oy)
      for (int64_t ox = 0; ox < w.out_w; ++ox) {
        const int64_t row = (n * w.out_h + oy) * w.out_w + ox;
        each_window_pixel(w, oy, ox, [&](int64_t ky, int64_t kx, int64_t iy, int64_t ix, bool inside) {
          if (!inside) return;
          for (int64_t c = 0; c < w.channels; ++c)
            dx[pixel(w, n, iy, ix, c)] +=
                col[static_cast<size_t>(row * patch_size(w) + (ky * w.kernel_w + kx) * w.channels + c)];
        });
      }
  return dx;
}

// Direct convolution with an HWIO kernel as a (patch, filters) matrix.
std::vector<double> ref_conv(const Window2D& w, int64_t filters, const std::vector<float>& x, const std::vector<float>& k) {
  std::vector<double> y(static_cast<size_t>(out_rows(w) * filters), 0.0);
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oy = 0; oy < w.out_h; ++oy)
      for (int64_t ox = 0; ox < w.out_w; ++ox) {
        double* out = y.data() + ((n * w.out_h + oy) * w.out_w + ox) * filters;
        each_window_pixel(w, oy, ox, [&](int64_t ky, int64_t kx, int64_t iy, int64_t ix, bool inside) {
          if (!inside) return;
          for (int64_t c = 0; c < w.channels; ++c)
            for (int64_t f = 0; f < filters; ++f)
              out[f] += static_cast<double>(x[pixel(w, n, iy, ix, c)]) *
                        k[static_cast<size_t>(((ky * w.kernel_w + kx) * w.channels + c) * filters + f)];
        });
      }
  return y;
}

// dx = sum over outputs of dy * kernel; dkernel = sum over outputs of dy * x.
void ref_conv_backward(const Window2D& w, int64_t filters, const std::vector<float>& x, const std::vector<float>& k,
                       const std::vector<float>& dy, std::vector<double>& dx, std::vector<double>& dk) {
  dx.assign(static_cast<size_t>(image_size(w)), 0.0);
  dk.assign(static_cast<size_t>(patch_size(w) * filters), 0.0);
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oy = 0; oy < w.out_h; ++oy)
      for (int64_t ox = 0; ox < w.out_w; ++ox) {
        const float* g = dy.data() + ((n * w.out_h + oy) * w.out_w + ox) * filters;
        each_window_pixel(w, oy, ox, [&](int64_t ky, int64_t kx, int64_t iy, int64_t ix, bool inside) {
          if (!inside) return;
          for (int64_t c = 0; c < w.channels; ++c)
            for (int64_t f = 0; f < filters; ++f) {
              const size_t ki = static_cast<size_t>(((ky * w.kernel_w + kx) * w.channels + c) * filters + f);
              dx[pixel(w, n, iy, ix, c)] += static_cast<double>(g[f]) * k[ki];
              dk[ki] += static_cast<double>(g[f]) * x[pixel(w, n, iy, ix, c)];
            }
        });
      }
}

// Max over the window's pixels inside the image, per channel, and where it is
// (the first maximum in window order, as the kernels scan).
void ref_max_pool(const Window2D& w, const std::vector<float>& x, std::vector<float>& y, std::vector<int32_t>& argmax) {
  y.assign(static_cast<size_t>(out_rows(w) * w.channels), 0.0f);
  argmax.assign(y.size(), -1);
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oy = 0; oy < w.out_h; ++oy)
      for (int64_t ox = 0; ox < w.out_w; ++ox)
        for (int64_t c = 0; c < w.channels; ++c) {
          float best = 0.0f;
          int32_t at = -1;
          each_window_pixel(w, oy, ox, [&](int64_t, int64_t, int64_t iy, int64_t ix, bool inside) {
            if (!inside) return;
            const size_t i = pixel(w, n, iy, ix, c);
            if (at < 0 || x[i] > best) {
              best = x[i];
              at = static_cast<int32_t>(i);
            }
          });
          y[out_index(w, n, oy, ox, c)] = best;
          argmax[out_index(w, n, oy, ox, c)] = at;
        }
}

// Mean over the window's pixels inside the image (TF's "same" averaging).
std::vector<double> ref_avg_pool(const Window2D& w, const std::vector<float>& x) {
  std::vector<double> y(static_cast<size_t>(out_rows(w) * w.channels), 0.0);
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oy = 0; oy < w.out_h; ++oy)
      for (int64_t ox = 0; ox < w.out_w; ++ox)
        for (int64_t c = 0; c < w.channels; ++c) {
          double sum = 0;
          int count = 0;
          each_window_pixel(w, oy, ox, [&](int64_t, int64_t, int64_t iy, int64_t ix, bool inside) {
            if (!inside) return;
            sum += x[pixel(w, n, iy, ix, c)];
            ++count;
          });
          y[out_index(w, n, oy, ox, c)] = sum / count;
        }
  return y;
}

std::vector<double> ref_avg_pool_backward(const Window2D& w, const std::vector<float>& dy) {
  std::vector<double> dx(static_cast<size_t>(image_size(w)), 0.0);
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t oy = 0; oy < w.out_h; ++oy)
      for (int64_t ox = 0; ox < w.out_w; ++ox) {
        int count = 0;
        each_window_pixel(w, oy, ox, [&](int64_t, int64_t, int64_t, int64_t, bool inside) { count += inside; });
        each_window_pixel(w, oy, ox, [&](int64_t, int64_t, int64_t iy, int64_t ix, bool inside) {
          if (!inside) return;
          for (int64_t c = 0; c < w.channels; ++c)
            dx[pixel(w, n, iy, ix, c)] += double(dy[out_index(w, n, oy, ox, c)]) / count;
        });
      }
  return dx;
}

// How many patch elements land on one pixel at most: bounds the float
// rounding of an accumulation over them.
double overlap(const Window2D& w) {
  const int64_t rows = (w.kernel_h + w.stride_h - 1) / w.stride_h, cols = (w.kernel_w + w.stride_w - 1) / w.stride_w;
  return static_cast<double>(rows * cols);
}

std::string what(const char* kernel, const WindowCase& c, int threads) {
  return std::string(kernel) + " [" + c.name + "] threads=" + std::to_string(threads);
}

// Batch-norm shapes: (rows, channels) views, from tiny to above the grain.
struct RowsChannels {
  int64_t rows, channels;
};
const RowsChannels kBatchNormShapes[] = {{1, 1}, {7, 3}, {5000, 16}, {30001, 3}, {600, 64}};

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

}  // namespace

class TestImageKernels : public QObject {
  Q_OBJECT

private slots:
  void initTestCase() {
    qInfo("random seed %llu (set STRATA_TEST_SEED to replay)", static_cast<unsigned long long>(testutil::process_seed()));
  }

  void cases_split_across_two_threads() {
    // The cases below would test one thread twice if they shrank under the grains.
    for (const auto& c : kWindows) {
      const Window2D w = make_case_window(c);
      QVERIFY2(w.out_h > 0 && w.out_w > 0, c.name);
      QVERIFY2(out_rows(w) >= 2 * kIm2colGrain, c.name);
      QVERIFY2(w.batch * w.out_h >= 2 * kPoolGrain, c.name);
      QVERIFY2(w.batch >= 2 * kImageGrain, c.name);
    }
    int split = 0;
    for (auto s : kBatchNormShapes) split += s.rows / std::max<int64_t>(1, kBatchNormWork / s.channels) >= 2;
    QVERIFY(split >= 2);
  }

  void im2col() {
    for (const auto& c : kWindows) {
      const Window2D w = make_case_window(c);
      const auto x = random_vector(static_cast<size_t>(image_size(w)));
      const auto want = ref_im2col(w, x);
      for (int threads : {1, 2}) {
        CpuBackend be(threads);
        auto col = nan_vector(want.size());  // padding must be written as zeros, not skipped
        be.im2col(w, x.data(), col.data());
        STRATA_COMPARE_OK(identical(col, want, what("im2col", c, threads)));
      }
    }
  }

  void im2col_of_windows_in_the_padding_only() {
    // Padding wider than the kernel (no layer makes it; the kernel must not
    // write past a patch row when one does): such windows are all zeros.
    // Every window's one column lies 2 or 3 columns left of the image, and
    // the last patch row ends the output.
    const Window2D w{.batch = 2,
                     .height = 3,
                     .width = 2,
                     .channels = 2,
                     .kernel_h = 2,
                     .kernel_w = 1,
                     .stride_h = 1,
                     .stride_w = 1,
                     .pad_top = 0,
                     .pad_left = 3,
                     .out_h = 2,
                     .out_w = 2};
    const auto x = random_vector(static_cast<size_t>(image_size(w)));
    const auto want = ref_im2col(w, x);
    CpuBackend be(1);
    auto col = nan_vector(want.size() + 16);  // room past the end, which must stay untouched
    be.im2col(w, x.data(), col.data());
    STRATA_COMPARE_OK(identical(std::vector<float>(col.begin(), col.begin() + static_cast<int64_t>(want.size())), want,
                                "im2col, windows in the padding"));
    for (size_t i = want.size(); i < col.size(); ++i) QVERIFY2(std::isnan(col[i]), "im2col wrote past its output");
  }

  void col2im() {
    for (const auto& c : kWindows) {
      const Window2D w = make_case_window(c);
      const auto col = random_vector(static_cast<size_t>(out_rows(w) * patch_size(w)));
      const auto want = ref_col2im(w, col);
      std::vector<float> by_threads[2];
      for (int threads : {1, 2}) {
        CpuBackend be(threads);
        auto dx = nan_vector(want.size());  // col2im zeroes dx first
        be.col2im(w, col.data(), dx.data());
        STRATA_COMPARE_OK(compare(dx, want, 1e-6 * overlap(w), 1e-6, what("col2im", c, threads)));
        by_threads[threads - 1] = dx;
      }
      // One thread sums each image, in the same order whatever the count.
      STRATA_COMPARE_OK(identical(by_threads[1], by_threads[0], what("col2im 1 vs 2 threads", c, 2)));
    }
  }

  void conv2d_of_an_empty_batch() {
    // A replica's slice of a tiny last batch may hold no example: nothing
    // to write forward, and a kernel gradient of zeros (not garbage).
    Window2D w{0, 6, 6, 3, 3, 3, 1, 1, 1, 1, 6, 6};
    const auto k = random_vector(static_cast<size_t>(patch_size(w) * 4));
    for (int threads : {1, 2}) {
      CpuBackend be(threads);
      std::vector<float> none(1, 7.0f);
      be.conv2d(w, 4, none.data(), k.data(), none.data());
      be.conv2d_backward_data(w, 4, none.data(), k.data(), none.data());
      QCOMPARE(none[0], 7.0f);
      auto dk = nan_vector(k.size());
      be.conv2d_backward_filter(w, 4, none.data(), none.data(), dk.data());
      for (float v : dk) QCOMPARE(v, 0.0f);
    }
  }

  void conv2d_through_the_patch_matrix() {
    // The CPU backend's convolution (oneDNN where the build has it, else
    // Backend's default through the patch matrix, the reference cuDNN's
    // results are checked against).
    for (const auto& c : kWindows) {
      const Window2D w = make_case_window(c);
      for (int64_t filters : {1, 7}) {
        const auto x = random_vector(static_cast<size_t>(image_size(w)));
        const auto k = random_vector(static_cast<size_t>(patch_size(w) * filters));
        const auto dy = random_vector(static_cast<size_t>(out_rows(w) * filters));
        const auto want = ref_conv(w, filters, x, k);
        std::vector<double> dx_want, dk_want;
        ref_conv_backward(w, filters, x, k, dy, dx_want, dk_want);
        const double atol = 2e-6 * static_cast<double>(patch_size(w)) + 1e-6;
        for (int threads : {1, 2}) {
          CpuBackend be(threads);
          auto y = nan_vector(want.size());
          be.conv2d(w, filters, x.data(), k.data(), y.data());
          STRATA_COMPARE_OK(compare(y, want, atol, 1e-5, what("conv2d", c, threads) + " filters=" + std::to_string(filters)));
          auto dx = nan_vector(dx_want.size());
          be.conv2d_backward_data(w, filters, dy.data(), k.data(), dx.data());
          STRATA_COMPARE_OK(compare(dx, dx_want, 2e-6 * overlap(w) * static_cast<double>(filters) + 1e-6, 1e-5,
                                    what("conv2d_backward_data", c, threads)));
          auto dk = nan_vector(dk_want.size());
          be.conv2d_backward_filter(w, filters, x.data(), dy.data(), dk.data());
          STRATA_COMPARE_OK(compare(dk, dk_want, 2e-6 * static_cast<double>(out_rows(w)) + 1e-6, 1e-5,
                                    what("conv2d_backward_filter", c, threads)));
        }
      }
    }
  }

  void max_pool() {
    for (const auto& c : kWindows) {
      const Window2D w = make_case_window(c);
      const auto x = random_vector(static_cast<size_t>(image_size(w)), -3.0f, 3.0f);
      std::vector<float> want;
      std::vector<int32_t> where;
      ref_max_pool(w, x, want, where);
      for (int threads : {1, 2}) {
        CpuBackend be(threads);
        auto y = nan_vector(want.size());
        std::vector<int32_t> argmax(want.size(), -7);
        be.max_pool(w, x.data(), nullptr, Activation::None, y.data(), argmax.data());
        // A maximum is one of the inputs: exact.
        STRATA_COMPARE_OK(identical(y, want, what("max_pool", c, threads)));
        QVERIFY2(argmax == where, qPrintable(QString::fromStdString(what("max_pool argmax", c, threads))));
      }
    }
  }

  void max_pool_with_bias_and_relu() {
    // relu(max(x + bias)) is max(relu(x + bias)): the same values as adding
    // the bias, applying relu and pooling, to the bit (one rounding of each
    // pixel plus its bias either way); the winner is the first maximum of
    // x + bias, and a window all below zero gives 0.
    for (const auto& c : kWindows) {
      const Window2D w = make_case_window(c);
      auto x = random_vector(static_cast<size_t>(image_size(w)), -3.0f, 3.0f);
      const auto bias = random_vector(static_cast<size_t>(w.channels), -1.0f, 1.0f);
      std::vector<float> shifted(x.size());
      for (size_t i = 0; i < x.size(); ++i) shifted[i] = x[i] + bias[i % static_cast<size_t>(w.channels)];
      std::vector<float> want;
      std::vector<int32_t> where;
      ref_max_pool(w, shifted, want, where);
      for (auto& v : want) v = std::max(v, 0.0f);
      for (int threads : {1, 2}) {
        CpuBackend be(threads);
        auto y = nan_vector(want.size());
        std::vector<int32_t> argmax(want.size(), -7);
        be.max_pool(w, x.data(), bias.data(), Activation::Relu, y.data(), argmax.data());
        STRATA_COMPARE_OK(identical(y, want, what("max_pool bias relu", c, threads)));
        QVERIFY2(argmax == where, qPrintable(QString::fromStdString(what("max_pool bias relu argmax", c, threads))));
      }
    }
    CpuBackend be(1);
    float x = 1.0f, y = 0.0f;
    int32_t at = 0;
    Window2D one{};
    one.batch = one.height = one.width = one.channels = one.kernel_h = one.kernel_w = one.stride_h = one.stride_w = 1;
    one.out_h = one.out_w = 1;
    QVERIFY_THROWS_EXCEPTION(strata::Error, be.max_pool(one, &x, nullptr, Activation::Tanh, &y, &at));
  }

  void max_pool_channel_vectors_nan_and_ties() {
    // The kernel takes channels eight at a time, then one by one: 13 and 21
    // channels have both parts. Inputs on a coarse grid tie often (the first
    // maximum in window order wins), and some are NaN (a NaN at a window's
    // first pixel is its result; a later one never replaces a maximum).
    for (int64_t channels : {13, 21}) {
      Window2D w{};
      w.batch = 3;
      w.height = 9;
      w.width = 7;
      w.channels = channels;
      w.kernel_h = w.kernel_w = 2;
      w.stride_h = w.stride_w = 2;
      w.out_h = 5;  // "same": the last row and column of windows hang over the edge
      w.out_w = 4;
      auto x = random_vector(static_cast<size_t>(image_size(w)), -3.0f, 3.0f);
      for (size_t i = 0; i < x.size(); ++i) x[i] = i % 17 == 3 ? std::nanf("") : std::round(x[i]);
      const auto bias = random_vector(static_cast<size_t>(channels), -1.0f, 1.0f);
      std::vector<float> shifted(x.size());
      for (size_t i = 0; i < x.size(); ++i) shifted[i] = x[i] + bias[i % static_cast<size_t>(channels)];
      for (const bool with_bias : {false, true}) {
        std::vector<float> want;
        std::vector<int32_t> where;
        ref_max_pool(w, with_bias ? shifted : x, want, where);
        if (with_bias)
          for (auto& v : want) v = v < 0.0f ? 0.0f : v;
        const std::string name = std::to_string(channels) + " channels" + (with_bias ? ", bias and relu" : "");
        CpuBackend be(1);
        auto y = nan_vector(want.size());
        std::vector<int32_t> argmax(want.size(), -7);
        be.max_pool(w, x.data(), with_bias ? bias.data() : nullptr, with_bias ? Activation::Relu : Activation::None, y.data(),
                    argmax.data());
        STRATA_COMPARE_OK(identical(y, want, "max_pool " + name));
        QVERIFY2(argmax == where, qPrintable(QString::fromStdString("max_pool argmax " + name)));
      }
    }
  }

  void max_pool_of_negative_inputs_is_not_zero() {
    // A window that sticks out into the padding takes the maximum of its
    // pixels inside the image, never a padded 0 (TF pads max pooling with -inf).
    Window2D w{};
    w.batch = 2;
    w.height = 3;
    w.width = 3;
    w.channels = 1;
    w.kernel_h = w.kernel_w = 2;
    w.stride_h = w.stride_w = 2;
    w.out_h = w.out_w = 2;  // "same": the second row and column of windows hang over the edge
    std::vector<float> x(18);
    for (size_t i = 0; i < x.size(); ++i) x[i] = -1.0f - static_cast<float>(i);
    for (int threads : {1, 2}) {
      CpuBackend be(threads);
      auto y = nan_vector(8);
      std::vector<int32_t> argmax(8, -7);
      be.max_pool(w, x.data(), nullptr, Activation::None, y.data(), argmax.data());
      // Image 0: windows {0,1,3,4}, {2,5}, {6,7}, {8}.
      STRATA_COMPARE_OK(identical(y, std::vector<float>{-1, -3, -7, -9, -10, -12, -16, -18}, "max_pool at the edges"));
      QCOMPARE(argmax, (std::vector<int32_t>{0, 2, 6, 8, 9, 11, 15, 17}));
    }
  }

  void max_pool_backward() {
    for (const auto& c : kWindows) {
      const Window2D w = make_case_window(c);
      const auto x = random_vector(static_cast<size_t>(image_size(w)), -3.0f, 3.0f);
      std::vector<float> y;
      std::vector<int32_t> argmax;
      ref_max_pool(w, x, y, argmax);
      const auto dy = random_vector(y.size());
      // Overlapping windows may share a maximum: their gradients add up.
      std::vector<double> want(x.size(), 0.0);
      for (size_t i = 0; i < dy.size(); ++i) want[static_cast<size_t>(argmax[i])] += dy[i];
      std::vector<float> by_threads[2];
      for (int threads : {1, 2}) {
        CpuBackend be(threads);
        auto dx = nan_vector(x.size());
        be.max_pool_backward(w, dy.data(), argmax.data(), dx.data());
        STRATA_COMPARE_OK(compare(dx, want, 1e-6 * overlap(w), 1e-6, what("max_pool_backward", c, threads)));
        by_threads[threads - 1] = dx;
      }
      STRATA_COMPARE_OK(identical(by_threads[1], by_threads[0], what("max_pool_backward 1 vs 2 threads", c, 2)));
    }
  }

  void avg_pool() {
    for (const auto& c : kWindows) {
      const Window2D w = make_case_window(c);
      const auto x = random_vector(static_cast<size_t>(image_size(w)));
      const auto want = ref_avg_pool(w, x);
      std::vector<float> by_threads[2];
      for (int threads : {1, 2}) {
        CpuBackend be(threads);
        auto y = nan_vector(want.size());
        be.avg_pool(w, x.data(), y.data());
        STRATA_COMPARE_OK(compare(y, want, 1e-6, 1e-6, what("avg_pool", c, threads)));
        by_threads[threads - 1] = y;
      }
      STRATA_COMPARE_OK(identical(by_threads[1], by_threads[0], what("avg_pool 1 vs 2 threads", c, 2)));
    }
  }

  void avg_pool_backward() {
    for (const auto& c : kWindows) {
      const Window2D w = make_case_window(c);
      const auto dy = random_vector(static_cast<size_t>(out_rows(w) * w.channels));
      const auto want = ref_avg_pool_backward(w, dy);
      std::vector<float> by_threads[2];
      for (int threads : {1, 2}) {
        CpuBackend be(threads);
        auto dx = nan_vector(want.size());
        be.avg_pool_backward(w, dy.data(), dx.data());
        STRATA_COMPARE_OK(compare(dx, want, 1e-6 * overlap(w), 1e-6, what("avg_pool_backward", c, threads)));
        by_threads[threads - 1] = dx;
      }
      STRATA_COMPARE_OK(identical(by_threads[1], by_threads[0], what("avg_pool_backward 1 vs 2 threads", c, 2)));
    }
  }

  void channel_sums() {
    for (auto s : kBatchNormShapes) {
      const auto x = random_vector(static_cast<size_t>(s.rows * s.channels), -2.0f, 3.0f);
      std::vector<double> sum(static_cast<size_t>(s.channels), 0.0), sumsq(sum.size(), 0.0);
      for (int64_t r = 0; r < s.rows; ++r)
        for (int64_t c = 0; c < s.channels; ++c) {
          const double v = x[static_cast<size_t>(r * s.channels + c)];
          sum[static_cast<size_t>(c)] += v;
          sumsq[static_cast<size_t>(c)] += v * v;
        }
      for (int threads : {1, 2}) {
        CpuBackend be(threads);
        auto got_sum = nan_vector(sum.size()), got_sumsq = nan_vector(sum.size());
        be.channel_sums(x.data(), s.rows, s.channels, got_sum.data(), got_sumsq.data());
        const std::string tag = "channel_sums rows=" + std::to_string(s.rows) + " threads=" + std::to_string(threads);
        // Accumulated in double: only the final rounding to float remains.
        STRATA_COMPARE_OK(compare(got_sum, sum, 1e-6, 1e-6, tag + " sum"));
        STRATA_COMPARE_OK(compare(got_sumsq, sumsq, 1e-6, 1e-6, tag + " sumsq"));
        // The same bits again for the same thread count.
        auto again_sum = nan_vector(sum.size()), again_sumsq = nan_vector(sum.size());
        be.channel_sums(x.data(), s.rows, s.channels, again_sum.data(), again_sumsq.data());
        STRATA_COMPARE_OK(identical(again_sum, got_sum, tag + " repeated"));
        STRATA_COMPARE_OK(identical(again_sumsq, got_sumsq, tag + " repeated"));
      }
    }
  }

  void batch_norm_stats() {
    const float eps = 1e-3f;
    for (int64_t channels : {1, 5, 64})
      for (float count : {0.0f, 1.0f, 1000.0f}) {
        // sums = [sum(C), sumsq(C), count] from a plausible batch.
        std::vector<float> sums(static_cast<size_t>(2 * channels + 1));
        std::vector<double> mean_want(static_cast<size_t>(channels)), inv_want(mean_want.size());
        for (int64_t c = 0; c < channels; ++c) {
          const double m = random_vector(1, -2.0f, 2.0f)[0], var = random_vector(1, 0.0f, 3.0f)[0];
          sums[static_cast<size_t>(c)] = static_cast<float>(m * count);
          sums[static_cast<size_t>(channels + c)] = static_cast<float>((var + m * m) * count);
          const double mean = count > 0 ? double(sums[static_cast<size_t>(c)]) / count : 0.0;
          const double v = count > 0 ? std::max(0.0, double(sums[static_cast<size_t>(channels + c)]) / count - mean * mean)
                                     : 0.0;
          mean_want[static_cast<size_t>(c)] = mean;
          inv_want[static_cast<size_t>(c)] = 1.0 / std::sqrt(v + eps);
        }
        sums.back() = count;
        for (int threads : {1, 2}) {
          CpuBackend be(threads);
          auto mean = nan_vector(mean_want.size()), inv_std = nan_vector(mean_want.size());
          be.batch_norm_stats(sums.data(), channels, eps, mean.data(), inv_std.data());
          const std::string tag = "batch_norm_stats count=" + std::to_string(count) + " threads=" + std::to_string(threads);
          // Computed in double from the same float sums: only the final rounding differs.
          STRATA_COMPARE_OK(compare(mean, mean_want, 1e-6, 1e-6, tag + " mean"));
          STRATA_COMPARE_OK(compare(inv_std, inv_want, 1e-6, 1e-6, tag + " inv_std"));
        }
      }
  }

  void batch_norm_inference_stats() {
    const float eps = 1e-3f;
    for (int threads : {1, 2}) {
      CpuBackend be(threads);
      const auto moving_mean = random_vector(37), moving_var = random_vector(37, 0.0f, 4.0f);
      auto mean = nan_vector(37), inv_std = nan_vector(37);
      be.batch_norm_inference_stats(moving_mean.data(), moving_var.data(), 37, eps, mean.data(), inv_std.data());
      std::vector<double> inv_want(37);
      for (size_t c = 0; c < 37; ++c) inv_want[c] = 1.0 / std::sqrt(double(moving_var[c]) + eps);
      STRATA_COMPARE_OK(identical(mean, moving_mean, "batch_norm_inference_stats mean"));
      STRATA_COMPARE_OK(compare(inv_std, inv_want, 1e-6, 1e-6, "batch_norm_inference_stats inv_std"));
    }
  }

  void batch_norm_moving_update() {
    const float eps = 1e-3f, momentum = 0.9f;
    const int64_t channels = 19;
    const auto mean = random_vector(channels), inv_std = random_vector(channels, 0.5f, 2.0f);
    const auto moving_mean0 = random_vector(channels), moving_var0 = random_vector(channels, 0.1f, 3.0f);
    for (int threads : {1, 2}) {
      CpuBackend be(threads);
      // A replica set with no examples (count 0) leaves the statistics alone.
      auto moving_mean = moving_mean0, moving_var = moving_var0;
      const float none = 0.0f;
      be.batch_norm_moving_update(mean.data(), inv_std.data(), &none, channels, eps, momentum, moving_mean.data(),
                                  moving_var.data());
      STRATA_COMPARE_OK(identical(moving_mean, moving_mean0, "batch_norm_moving_update count=0 mean"));
      STRATA_COMPARE_OK(identical(moving_var, moving_var0, "batch_norm_moving_update count=0 var"));
      const float count = 128.0f;
      be.batch_norm_moving_update(mean.data(), inv_std.data(), &count, channels, eps, momentum, moving_mean.data(),
                                  moving_var.data());
      std::vector<double> mean_want(channels), var_want(channels);
      for (size_t c = 0; c < static_cast<size_t>(channels); ++c) {
        const double var = 1.0 / (double(inv_std[c]) * inv_std[c]) - eps;
        mean_want[c] = moving_mean0[c] * double(momentum) + mean[c] * (1.0 - double(momentum));
        var_want[c] = moving_var0[c] * double(momentum) + var * (1.0 - double(momentum));
      }
      STRATA_COMPARE_OK(compare(moving_mean, mean_want, 1e-6, 1e-5, "batch_norm_moving_update mean"));
      STRATA_COMPARE_OK(compare(moving_var, var_want, 1e-5, 1e-5, "batch_norm_moving_update var"));
    }
  }

  void batch_norm_apply() {
    for (auto s : kBatchNormShapes)
      for (bool affine : {false, true}) {
        const auto x = random_vector(static_cast<size_t>(s.rows * s.channels), -3.0f, 3.0f);
        const auto mean = random_vector(static_cast<size_t>(s.channels));
        const auto inv_std = random_vector(static_cast<size_t>(s.channels), 0.5f, 2.0f);
        const auto gamma = random_vector(static_cast<size_t>(s.channels)),
                   beta = random_vector(static_cast<size_t>(s.channels));
        std::vector<double> want(x.size());
        for (int64_t r = 0; r < s.rows; ++r)
          for (int64_t c = 0; c < s.channels; ++c) {
            const size_t i = static_cast<size_t>(r * s.channels + c), k = static_cast<size_t>(c);
            want[i] = (double(x[i]) - mean[k]) * inv_std[k] * (affine ? gamma[k] : 1.0) + (affine ? beta[k] : 0.0);
          }
        std::vector<float> by_threads[2];
        for (int threads : {1, 2}) {
          CpuBackend be(threads);
          auto y = nan_vector(x.size());
          be.batch_norm_apply(x.data(), s.rows, s.channels, mean.data(), inv_std.data(), affine ? gamma.data() : nullptr,
                              affine ? beta.data() : nullptr, y.data());
          const std::string tag = "batch_norm_apply rows=" + std::to_string(s.rows) + " affine=" + std::to_string(affine) +
                                  " threads=" + std::to_string(threads);
          STRATA_COMPARE_OK(compare(y, want, 2e-6, 2e-6, tag));
          by_threads[threads - 1] = y;
        }
        STRATA_COMPARE_OK(identical(by_threads[1], by_threads[0], "batch_norm_apply 1 vs 2 threads"));
      }
  }

  void batch_norm_backward() {
    for (auto s : kBatchNormShapes)
      for (bool with_gamma : {false, true}) {
        const size_t n = static_cast<size_t>(s.rows * s.channels), C = static_cast<size_t>(s.channels);
        const auto x = random_vector(n, -3.0f, 3.0f), dy = random_vector(n);
        const auto mean = random_vector(C), inv_std = random_vector(C, 0.5f, 2.0f), gamma = random_vector(C);
        std::vector<double> sum_dy(C, 0.0), sum_dy_xhat(C, 0.0), abs_dy_xhat(C, 0.0);
        for (size_t i = 0; i < n; ++i) {
          const size_t c = i % C;
          const double term = double(dy[i]) * (double(x[i]) - mean[c]) * inv_std[c];
          sum_dy[c] += dy[i];
          sum_dy_xhat[c] += term;
          abs_dy_xhat[c] += std::fabs(term);
        }
        // The kernel accumulates in double, but forms x - mean in float: each
        // term may be off by a float rounding, which the sum's bound allows.
        const double xhat_atol = 2e-7 * *std::max_element(abs_dy_xhat.begin(), abs_dy_xhat.end()) + 1e-6;
        // The count over all replicas may exceed this replica's rows (synchronised statistics).
        const float count = static_cast<float>(2 * s.rows + 1);
        std::vector<float> by_threads[2];
        for (int threads : {1, 2}) {
          CpuBackend be(threads);
          const std::string tag = "rows=" + std::to_string(s.rows) + " gamma=" + std::to_string(with_gamma) +
                                  " threads=" + std::to_string(threads);
          auto got_dy = nan_vector(C), got_dy_xhat = nan_vector(C);
          be.batch_norm_backward_reduce(dy.data(), x.data(), s.rows, s.channels, mean.data(), inv_std.data(), got_dy.data(),
                                        got_dy_xhat.data());
          STRATA_COMPARE_OK(compare(got_dy, sum_dy, 1e-6, 1e-6, "batch_norm_backward_reduce sum_dy " + tag));
          STRATA_COMPARE_OK(
              compare(got_dy_xhat, sum_dy_xhat, xhat_atol, 1e-6, "batch_norm_backward_reduce sum_dy_xhat " + tag));

          // dx = gamma * inv_std / count * (count * dy - sum_dy - xhat * sum_dy_xhat), from the sums given.
          std::vector<double> want(n);
          for (size_t i = 0; i < n; ++i) {
            const size_t c = i % C;
            const double xhat = (double(x[i]) - mean[c]) * inv_std[c];
            want[i] = (with_gamma ? gamma[c] : 1.0) * inv_std[c] / count *
                      (count * double(dy[i]) - got_dy[c] - xhat * double(got_dy_xhat[c]));
          }
          auto dx = nan_vector(n);
          be.batch_norm_backward_apply(dy.data(), x.data(), s.rows, s.channels, mean.data(), inv_std.data(),
                                       with_gamma ? gamma.data() : nullptr, got_dy.data(), got_dy_xhat.data(), &count,
                                       dx.data());
          STRATA_COMPARE_OK(compare(dx, want, 1e-5, 1e-5, "batch_norm_backward_apply " + tag));
          by_threads[threads - 1] = dx;
        }
        // The sums above may differ in their last bit between thread counts;
        // the element-wise pass must agree closely.
        STRATA_COMPARE_OK(
            compare(by_threads[1], to_double(by_threads[0]), 1e-5, 1e-5, "batch_norm_backward_apply 1 vs 2 threads"));
      }
  }

  // The relu's backward passes take its gradient from x, gamma and beta
  // (v = x * scale + shift > 0) rather than from the forward pass's output:
  // they must give the bits of the plain passes fed dz = y > 0 ? dy : 0,
  // with y what batch_norm_apply_relu wrote, for every element, those whose
  // v rounds to about 0 included (x at the mean, beta 0), and for the
  // gamma/beta-less layer.
  void batch_norm_relu_backward_takes_the_relus_gradient() {
    for (auto s : kBatchNormShapes)
      for (bool affine : {false, true}) {
        const size_t n = static_cast<size_t>(s.rows * s.channels), C = static_cast<size_t>(s.channels);
        auto x = random_vector(n, -3.0f, 3.0f);
        const auto dy = random_vector(n), mean = random_vector(C), inv_std = random_vector(C, 0.5f, 2.0f);
        // |gamma| >= 0.5 and |beta| <= 0.1 keep every channel's relu cut near
        // its mean, so both sides are exercised whatever the seed (gamma in
        // [-1, 1] and beta in [-1, 1] left a 3-channel layer with fewer than
        // a tenth of its elements on one side for some seeds).
        auto gamma = random_vector(C, 0.5f, 2.0f), beta = random_vector(C, -0.1f, 0.1f);
        const auto signs = random_vector(C);
        for (size_t c = 0; c < C; ++c) gamma[c] = signs[c] < 0.0f ? -gamma[c] : gamma[c];
        for (size_t i = 0; i < n; i += 7) x[i] = mean[i % C];
        beta[0] = 0.0f;
        const float* g = affine ? gamma.data() : nullptr;
        const float* b = affine ? beta.data() : nullptr;
        const float count = static_cast<float>(s.rows);
        CpuBackend be(2);
        auto y = nan_vector(n);
        be.batch_norm_apply_relu(x.data(), s.rows, s.channels, mean.data(), inv_std.data(), g, b, y.data());
        std::vector<float> dz(n);
        size_t cut = 0;
        for (size_t i = 0; i < n; ++i) {
          dz[i] = y[i] > 0.0f ? dy[i] : 0.0f;
          cut += !(y[i] > 0.0f);
        }
        if (n >= 1000) QVERIFY(cut > n / 10 && cut < n - n / 10);  // both sides of the relu are exercised
        auto want_sum = nan_vector(C), want_xhat = nan_vector(C), got_sum = nan_vector(C), got_xhat = nan_vector(C);
        be.batch_norm_backward_reduce(dz.data(), x.data(), s.rows, s.channels, mean.data(), inv_std.data(), want_sum.data(),
                                      want_xhat.data());
        be.batch_norm_relu_backward_reduce(dy.data(), x.data(), s.rows, s.channels, mean.data(), inv_std.data(), g, b,
                                           got_sum.data(), got_xhat.data());
        const std::string tag = " rows=" + std::to_string(s.rows) + " affine=" + std::to_string(affine);
        STRATA_COMPARE_OK(identical(got_sum, want_sum, "batch_norm_relu_backward_reduce sum_dz" + tag));
        STRATA_COMPARE_OK(identical(got_xhat, want_xhat, "batch_norm_relu_backward_reduce sum_dz_xhat" + tag));
        auto want_dx = nan_vector(n), got_dx = nan_vector(n);
        be.batch_norm_backward_apply(dz.data(), x.data(), s.rows, s.channels, mean.data(), inv_std.data(), g, want_sum.data(),
                                     want_xhat.data(), &count, want_dx.data());
        be.batch_norm_relu_backward_apply(dy.data(), x.data(), s.rows, s.channels, mean.data(), inv_std.data(), g, b,
                                          want_sum.data(), want_xhat.data(), &count, got_dx.data());
        STRATA_COMPARE_OK(identical(got_dx, want_dx, "batch_norm_relu_backward_apply" + tag));
      }
  }

  void batch_norm_channel_counts_change_no_bits() {
    // The kernels have loops for 16, 32 and 64 channels with the count a
    // compile-time constant, and one for any count. Every channel is its own
    // computation (its rows in row order, each thread's block summed in
    // double), so each channel of a 16-, 32- or 64-channel call must have the
    // bits of that channel's column computed alone, by the general loop.
    const int64_t rows = 3001;
    for (int64_t C : {16, 32, 64})
      for (int threads : {1, 2}) {
        CpuBackend be(threads);
        const size_t n = static_cast<size_t>(rows * C), nc = static_cast<size_t>(C);
        const auto x = random_vector(n, -3.0f, 3.0f), dy = random_vector(n);
        const auto mean = random_vector(nc), inv_std = random_vector(nc, 0.5f, 2.0f), gamma = random_vector(nc),
                   beta = random_vector(nc);
        const float count = static_cast<float>(rows);
        // Every kernel's outputs, in a fixed order, for a (rows, channels) problem.
        auto run = [&](int64_t channels, const float* px, const float* pdy, const float* pm, const float* pis,
                       const float* pg, const float* pb) {
          const size_t m = static_cast<size_t>(rows * channels), k = static_cast<size_t>(channels);
          std::vector<std::vector<float>> out;
          auto sum = nan_vector(k), sumsq = nan_vector(k);
          be.channel_sums(px, rows, channels, sum.data(), sumsq.data());
          auto y = nan_vector(m), y_relu = nan_vector(m);
          be.batch_norm_apply(px, rows, channels, pm, pis, pg, pb, y.data());
          be.batch_norm_apply_relu(px, rows, channels, pm, pis, pg, pb, y_relu.data());
          auto sdy = nan_vector(k), sdxh = nan_vector(k), sdz = nan_vector(k), sdzxh = nan_vector(k);
          be.batch_norm_backward_reduce(pdy, px, rows, channels, pm, pis, sdy.data(), sdxh.data());
          be.batch_norm_relu_backward_reduce(pdy, px, rows, channels, pm, pis, pg, pb, sdz.data(), sdzxh.data());
          auto dx = nan_vector(m), dx_relu = nan_vector(m);
          be.batch_norm_backward_apply(pdy, px, rows, channels, pm, pis, pg, sdy.data(), sdxh.data(), &count, dx.data());
          be.batch_norm_relu_backward_apply(pdy, px, rows, channels, pm, pis, pg, pb, sdz.data(), sdzxh.data(), &count,
                                            dx_relu.data());
          for (auto* v : {&sum, &sumsq, &y, &y_relu, &sdy, &sdxh, &sdz, &sdzxh, &dx, &dx_relu}) out.push_back(std::move(*v));
          return out;
        };
        const auto all = run(C, x.data(), dy.data(), mean.data(), inv_std.data(), gamma.data(), beta.data());
        for (int64_t c = 0; c < C; ++c) {
          std::vector<float> xc(static_cast<size_t>(rows)), dyc(static_cast<size_t>(rows));
          for (int64_t r = 0; r < rows; ++r) {
            xc[static_cast<size_t>(r)] = x[static_cast<size_t>(r * C + c)];
            dyc[static_cast<size_t>(r)] = dy[static_cast<size_t>(r * C + c)];
          }
          const size_t i = static_cast<size_t>(c);
          const auto one = run(1, xc.data(), dyc.data(), &mean[i], &inv_std[i], &gamma[i], &beta[i]);
          for (size_t k = 0; k < all.size(); ++k) {
            // Per-channel outputs hold one value, per-element ones a column.
            const bool per_channel = all[k].size() == nc;
            std::vector<float> column;
            for (int64_t r = 0; r < (per_channel ? 1 : rows); ++r)
              column.push_back(all[k][per_channel ? i : static_cast<size_t>(r * C + c)]);
            STRATA_COMPARE_OK(identical(column, one[k],
                                        "output " + std::to_string(k) + " of channel " + std::to_string(c) + " of " +
                                            std::to_string(C) + ", threads=" + std::to_string(threads)));
          }
        }
      }
  }
};

QTEST_APPLESS_MAIN(TestImageKernels)
#include "test_image_kernels.moc"
