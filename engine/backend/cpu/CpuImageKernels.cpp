// Image (NHWC) and batch-norm kernels of the CPU backend. Kept apart from
// the dense kernels in CpuBackend.cpp to keep both files readable.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "backend/cpu/CpuBackend.h"
#include "backend/cpu/ReluPass.h"

namespace strata {

void CpuBackend::im2col(const Window2D& w, const float* x, float* col) {
  const int64_t patch = w.kernel_h * w.kernel_w * w.channels;
  const int64_t rows = w.batch * w.out_h * w.out_w;
  pool_.parallel_for(rows, 64, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t n = r / (w.out_h * w.out_w);
      const int64_t oy = r / w.out_w % w.out_h, ox = r % w.out_w;
      float* dst = col + r * patch;
      const int64_t ix0 = ox * w.stride_w - w.pad_left;
      for (int64_t ky = 0; ky < w.kernel_h; ++ky) {
        const int64_t iy = oy * w.stride_h - w.pad_top + ky;
        float* d = dst + ky * w.kernel_w * w.channels;
        if (iy < 0 || iy >= w.height) {
          std::fill(d, d + w.kernel_w * w.channels, 0.0f);
          continue;
        }
        // In NHWC one kernel row is one contiguous run of kernel_w * C floats:
        // copy the part inside the image at once, zero the padding around it.
        // k0 capped: a window wholly in the left padding is all zeros.
        const int64_t k0 = std::min<int64_t>(w.kernel_w, std::max<int64_t>(0, -ix0)),
                      k1 = std::min<int64_t>(w.kernel_w, w.width - ix0);
        if (k0 > 0) std::fill(d, d + k0 * w.channels, 0.0f);
        if (k1 > k0)
          std::memcpy(d + k0 * w.channels, x + ((n * w.height + iy) * w.width + ix0 + k0) * w.channels,
                      static_cast<size_t>((k1 - k0) * w.channels) * 4);
        if (k1 < w.kernel_w) std::fill(d + std::max(k1, k0) * w.channels, d + w.kernel_w * w.channels, 0.0f);
      }
    }
  });
}

namespace {
// Calls fn(width) with the channel count as a compile-time constant where it
// is one of the common ones, else as a plain integer. A row's loop over a
// constant width is vectorised without remainder handling, and per-channel
// sums of that width stay in registers across rows (reloaded and stored
// every row otherwise, which made the sums in double a third as fast).
template <typename Fn>
void with_channel_width(int64_t channels, Fn&& fn) {
  switch (channels) {
    case 16: fn(std::integral_constant<int64_t, 16>{}); break;
    case 32: fn(std::integral_constant<int64_t, 32>{}); break;
    case 64: fn(std::integral_constant<int64_t, 64>{}); break;
    default: fn(channels);
  }
}

// Batch norm's element-wise passes: fn(r, width) for every row r of a
// (rows, channels) view, the rows split across the pool, with_channel_width's
// width (the row's loop bound).
template <typename RowFn>
void for_each_channel_row(ThreadPool& pool, int64_t rows, int64_t channels, RowFn fn) {
  pool.parallel_for(rows, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, channels)), [&](int64_t lo, int64_t hi) {
    with_channel_width(channels, [&](auto width) {
      for (int64_t r = lo; r < hi; ++r) fn(r, width);
    });
  });
}

// The window at (oy, ox): where it starts (top, left; negative in the
// padding) and the part of it inside the image, rows [y0, y1) and columns
// [x0, x1) (empty where the window is all padding).
struct WindowSpan {
  int64_t top, left, y0, y1, x0, x1;
};
WindowSpan window_span(const Window2D& w, int64_t oy, int64_t ox) {
  const int64_t top = oy * w.stride_h - w.pad_top, left = ox * w.stride_w - w.pad_left;
  return {top,
          left,
          std::max<int64_t>(0, top),
          std::min<int64_t>(w.height, top + w.kernel_h),
          std::max<int64_t>(0, left),
          std::min<int64_t>(w.width, left + w.kernel_w)};
}

// Calls fn(k, offset) for every pixel of window (oy, ox) of image n that lies
// inside the image (padding skipped): k is the pixel's index in the window
// (ky * kernel_w + kx), offset where it starts in the NHWC input.
template <typename Fn>
void for_each_window_pixel(const Window2D& w, int64_t n, int64_t oy, int64_t ox, Fn fn) {
  const WindowSpan s = window_span(w, oy, ox);
  for (int64_t iy = s.y0; iy < s.y1; ++iy)
    for (int64_t ix = s.x0; ix < s.x1; ++ix)
      fn((iy - s.top) * w.kernel_w + (ix - s.left), ((n * w.height + iy) * w.width + ix) * w.channels);
}
}  // namespace

void CpuBackend::col2im(const Window2D& w, const float* col, float* dx) {
  const int64_t patch = w.kernel_h * w.kernel_w * w.channels;
  const int64_t image = w.height * w.width * w.channels;
  // Parallel over images: patches of one image overlap, of different images never.
  pool_.parallel_for(w.batch, 1, [&](int64_t lo, int64_t hi) {
    std::fill(dx + lo * image, dx + hi * image, 0.0f);
    for (int64_t n = lo; n < hi; ++n)
      for (int64_t oy = 0; oy < w.out_h; ++oy)
        for (int64_t ox = 0; ox < w.out_w; ++ox) {
          const float* src = col + ((n * w.out_h + oy) * w.out_w + ox) * patch;
          for_each_window_pixel(w, n, oy, ox, [&](int64_t k, int64_t at) {
            float* d = dx + at;
            const float* s = src + k * w.channels;
            for (int64_t c = 0; c < w.channels; ++c) d[c] += s[c];
          });
        }
  });
}

namespace {
// Eight channels in one vector (GCC's vector extensions: one AVX2 register;
// plain SSE pairs or scalar code where the target has less).
using Floats8 = float __attribute__((vector_size(32)));
using Ints8 = int32_t __attribute__((vector_size(32)));

template <typename V>
V load(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Max pooling of one window of image n for channels [c0, c0 + 8), or for
// channel c0 alone (kOne): the maxima and their indices kept in registers
// over the window and stored once. A select written straight into the output
// compiled to masked stores, which AMD's cores run microcoded (3% of a
// one-thread CNN+BN run's samples on Zen 3); with the window's bounds known up front there is no
// per-pixel branch either.
// The window's first pixel starts every channel (NaN included); every pixel
// then replaces it only where strictly greater (the first, compared again,
// never does). With a bias the pixels compared are x + bias, rounded as a
// separate bias pass would have rounded them.
template <bool kOne, bool kBias>
void max_pool_channels(const Window2D& w, int64_t n, const WindowSpan& s, int64_t c0, const float* x, const float* bias,
                       bool relu, float* y, int32_t* argmax) {
  using F = std::conditional_t<kOne, float, Floats8>;
  using I = std::conditional_t<kOne, int32_t, Ints8>;
  const I lanes = kOne ? I{} : load<I>(std::array<int32_t, 8>{0, 1, 2, 3, 4, 5, 6, 7}.data());
  const F b = kBias ? load<F>(bias + c0) : F{};
  auto at = [&](int64_t iy, int64_t ix) { return ((n * w.height + iy) * w.width + ix) * w.channels + c0; };
  F best;
  I where;
  if (s.y0 >= s.y1 || s.x0 >= s.x1) {  // a window entirely in the padding
    best = F{} - std::numeric_limits<float>::infinity();
    where = I{} - 1;
  } else {
    const int64_t first = at(s.y0, s.x0);
    best = kBias ? load<F>(x + first) + b : load<F>(x + first);
    where = lanes + static_cast<int32_t>(first);
    for (int64_t iy = s.y0; iy < s.y1; ++iy)
      for (int64_t ix = s.x0; ix < s.x1; ++ix) {
        const int64_t base = at(iy, ix);
        const F u = kBias ? load<F>(x + base) + b : load<F>(x + base);
        const auto greater = u > best;
        best = greater ? u : best;
        where = greater ? lanes + static_cast<int32_t>(base) : where;
      }
  }
  // std::max(v, 0) as activation_forward's relu: a NaN passes through.
  if (relu) best = best < F{} ? F{} : best;
  std::memcpy(y + c0, &best, sizeof best);
  std::memcpy(argmax + c0, &where, sizeof where);
}

// Output rows [lo, hi) of batch * out_h, each pixel's channels eight at a
// time, then one by one.
template <bool kBias>
void max_pool_rows(const Window2D& w, int64_t lo, int64_t hi, const float* x, const float* bias, bool relu, float* y,
                   int32_t* argmax) {
  for (int64_t row = lo; row < hi; ++row) {
    const int64_t n = row / w.out_h, oy = row % w.out_h;
    for (int64_t ox = 0; ox < w.out_w; ++ox) {
      const WindowSpan s = window_span(w, oy, ox);
      const int64_t out = ((n * w.out_h + oy) * w.out_w + ox) * w.channels;
      int64_t c = 0;
      for (; c + 8 <= w.channels; c += 8) max_pool_channels<false, kBias>(w, n, s, c, x, bias, relu, y + out, argmax + out);
      for (; c < w.channels; ++c) max_pool_channels<true, kBias>(w, n, s, c, x, bias, relu, y + out, argmax + out);
    }
  }
}
}  // namespace

void CpuBackend::max_pool(const Window2D& w, const float* x, const float* bias, Activation act, float* y, int32_t* argmax) {
  require_pool_activation(act);
  const bool relu = act == Activation::Relu;
  pool_.parallel_for(w.batch * w.out_h, 4, [&](int64_t lo, int64_t hi) {
    if (bias) max_pool_rows<true>(w, lo, hi, x, bias, relu, y, argmax);
    else max_pool_rows<false>(w, lo, hi, x, bias, relu, y, argmax);
  });
}

void CpuBackend::max_pool_backward(const Window2D& w, const float* dy, const int32_t* argmax, float* dx) {
  const int64_t image = w.height * w.width * w.channels;
  const int64_t out_image = w.out_h * w.out_w * w.channels;
  // Per image: windows of one image may share a maximum, images never do.
  // An image's gradient is cleared just before its maxima are added in, while
  // it is in cache (clearing the whole batch first sent 6 MB through memory twice).
  pool_.parallel_for(w.batch, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n) {
      std::fill(dx + n * image, dx + (n + 1) * image, 0.0f);
      for (int64_t i = n * out_image; i < (n + 1) * out_image; ++i)
        if (argmax[i] >= 0) dx[argmax[i]] += dy[i];
    }
  });
}

namespace {
// Pixels of the window at (oy, ox) that lie inside the image.
int64_t window_count(const Window2D& w, int64_t oy, int64_t ox) {
  const WindowSpan s = window_span(w, oy, ox);
  return std::max<int64_t>(0, s.y1 - s.y0) * std::max<int64_t>(0, s.x1 - s.x0);
}
}  // namespace

void CpuBackend::avg_pool(const Window2D& w, const float* x, float* y) {
  const int64_t C = w.channels;
  pool_.parallel_for(w.batch * w.out_h, 4, [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      const int64_t n = row / w.out_h, oy = row % w.out_h;
      for (int64_t ox = 0; ox < w.out_w; ++ox) {
        float* out = y + ((n * w.out_h + oy) * w.out_w + ox) * C;
        std::fill(out, out + C, 0.0f);
        for_each_window_pixel(w, n, oy, ox, [&](int64_t, int64_t at) {
          for (int64_t c = 0; c < C; ++c) out[c] += x[at + c];
        });
        const float inv = 1.0f / static_cast<float>(std::max<int64_t>(1, window_count(w, oy, ox)));
        for (int64_t c = 0; c < C; ++c) out[c] *= inv;
      }
    }
  });
}

void CpuBackend::avg_pool_backward(const Window2D& w, const float* dy, float* dx) {
  const int64_t C = w.channels;
  const int64_t image = w.height * w.width * C;
  pool_.parallel_for(w.batch, 1, [&](int64_t lo, int64_t hi) {
    std::fill(dx + lo * image, dx + hi * image, 0.0f);
    for (int64_t n = lo; n < hi; ++n)
      for (int64_t oy = 0; oy < w.out_h; ++oy)
        for (int64_t ox = 0; ox < w.out_w; ++ox) {
          const float* g = dy + ((n * w.out_h + oy) * w.out_w + ox) * C;
          const float inv = 1.0f / static_cast<float>(std::max<int64_t>(1, window_count(w, oy, ox)));
          for_each_window_pixel(w, n, oy, ox, [&](int64_t, int64_t at) {
            for (int64_t c = 0; c < C; ++c) dx[at + c] += g[c] * inv;
          });
        }
  });
}

namespace {
// Row blocks reduced per thread in double, then combined in block order: the
// same bits for a given thread count, and no float cancellation over 50k rows.
// fn(r, width, a, b) adds row r into a[0..width) and b[0..width).
template <typename RowFn>
void reduce_rows(ThreadPool& pool, int64_t rows, int64_t channels, float* out_a, float* out_b, RowFn fn) {
  const int parts = pool.size();
  std::vector<std::vector<double>> a(static_cast<size_t>(parts), std::vector<double>(static_cast<size_t>(channels), 0.0));
  std::vector<std::vector<double>> b = a;
  pool.parallel_for(parts, 1, [&](int64_t plo, int64_t phi) {
    for (int64_t p = plo; p < phi; ++p) {
      const int64_t lo = rows * p / parts, hi = rows * (p + 1) / parts;
      double* pa = a[static_cast<size_t>(p)].data();
      double* pb = b[static_cast<size_t>(p)].data();
      with_channel_width(channels, [&](auto width) {
        if constexpr (std::is_integral_v<decltype(width)>) {
          for (int64_t r = lo; r < hi; ++r) fn(r, width, pa, pb);
        } else {
          double ta[width], tb[width];
          std::copy_n(pa, width, ta);
          std::copy_n(pb, width, tb);
          for (int64_t r = lo; r < hi; ++r) fn(r, width, ta, tb);
          std::copy_n(ta, width, pa);
          std::copy_n(tb, width, pb);
        }
      });
    }
  });
  for (int64_t c = 0; c < channels; ++c) {
    double sa = 0, sb = 0;
    for (int p = 0; p < parts; ++p) {
      sa += a[static_cast<size_t>(p)][static_cast<size_t>(c)];
      sb += b[static_cast<size_t>(p)][static_cast<size_t>(c)];
    }
    out_a[c] = static_cast<float>(sa);
    out_b[c] = static_cast<float>(sb);
  }
}
}  // namespace

void CpuBackend::channel_sums(const float* x, int64_t rows, int64_t channels, float* sum, float* sumsq) {
  reduce_rows(pool_, rows, channels, sum, sumsq, [&](int64_t r, auto width, double* a, double* b) {
    const float* row = x + r * channels;
#pragma omp simd
    for (int64_t j = 0; j < width; ++j) {
      a[j] += row[j];
      b[j] += static_cast<double>(row[j]) * row[j];
    }
  });
}

void CpuBackend::batch_norm_stats(const float* sums, int64_t channels, float epsilon, float* mean, float* inv_std) {
  const double count = sums[2 * channels];
  for (int64_t c = 0; c < channels; ++c) {
    const double m = count > 0 ? sums[c] / count : 0.0;
    const double var = count > 0 ? std::max(0.0, sums[channels + c] / count - m * m) : 0.0;
    mean[c] = static_cast<float>(m);
    inv_std[c] = static_cast<float>(1.0 / std::sqrt(var + epsilon));
  }
}

void CpuBackend::batch_norm_inference_stats(const float* moving_mean, const float* moving_var, int64_t channels,
                                            float epsilon, float* mean, float* inv_std) {
  for (int64_t c = 0; c < channels; ++c) {
    mean[c] = moving_mean[c];
    inv_std[c] = 1.0f / std::sqrt(moving_var[c] + epsilon);
  }
}

void CpuBackend::batch_norm_moving_update(const float* mean, const float* inv_std, const float* count, int64_t channels,
                                          float epsilon, float momentum, float* moving_mean, float* moving_var) {
  if (!(count[0] > 0.0f)) return;
  for (int64_t c = 0; c < channels; ++c) {
    const float var = 1.0f / (inv_std[c] * inv_std[c]) - epsilon;
    moving_mean[c] = moving_mean[c] * momentum + mean[c] * (1.0f - momentum);
    moving_var[c] = moving_var[c] * momentum + var * (1.0f - momentum);
  }
}

namespace {
// Batch norm's per-channel affine map, v = affine(x, scale, shift), the one
// expression that batch_norm_apply(_relu) and the relu's backward passes
// all compute (the backward passes take the relu's gradient from v > 0, and
// must see the forward pass's bits: GCC fuses the multiply-add in each).
// Fused only where the target has FMA (STRATA_NATIVE on any x86 CPU since
// 2013, the default): elsewhere v rounds twice, still the same in every pass
// here, but near 0 the relu mask can then differ from the GPU's __fmaf_rn.
struct BatchNormAffine {
  std::vector<float> scale, shift;
  BatchNormAffine(int64_t channels, const float* mean, const float* inv_std, const float* gamma, const float* beta)
      : scale(static_cast<size_t>(channels)), shift(static_cast<size_t>(channels)) {
    for (int64_t c = 0; c < channels; ++c) {
      const auto i = static_cast<size_t>(c);
      scale[i] = inv_std[c] * (gamma ? gamma[c] : 1.0f);
      // One rounding, as the GPU's channel_affine (__fmaf_rn): without it the
      // two backends' relu masks may differ where v is near 0.
      shift[i] = std::fma(-mean[c], scale[i], beta ? beta[c] : 0.0f);
    }
  }
};
inline float affine(float x, float scale, float shift) { return x * scale + shift; }

// y = v, then relu where asked (as activation_forward's: a NaN passes
// through): batch_norm_apply and batch_norm_apply_relu, the same arithmetic.
template <bool kRelu>
void apply_batch_norm(ThreadPool& pool, const float* x, int64_t rows, int64_t channels, const float* mean,
                      const float* inv_std, const float* gamma, const float* beta, float* y) {
  const BatchNormAffine f(channels, mean, inv_std, gamma, beta);
  for_each_channel_row(pool, rows, channels, [&](int64_t r, auto width) {
    const float* xr = x + r * channels;
    float* yr = y + r * channels;
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) {
      const float v = affine(xr[c], f.scale[static_cast<size_t>(c)], f.shift[static_cast<size_t>(c)]);
      yr[c] = kRelu && v < 0.0f ? 0.0f : v;
    }
  });
}
}  // namespace

void CpuBackend::batch_norm_apply(const float* x, int64_t rows, int64_t channels, const float* mean, const float* inv_std,
                                  const float* gamma, const float* beta, float* y) {
  apply_batch_norm<false>(pool_, x, rows, channels, mean, inv_std, gamma, beta, y);
}

void CpuBackend::batch_norm_apply_relu(const float* x, int64_t rows, int64_t channels, const float* mean,
                                       const float* inv_std, const float* gamma, const float* beta, float* y) {
  apply_batch_norm<true>(pool_, x, rows, channels, mean, inv_std, gamma, beta, y);
}

namespace {
// sum_dy[c] and sum_dy_xhat[c] over the rows, of dy or (kRelu) of dz =
// relu_pass(v, dy): batch_norm_backward_reduce and
// batch_norm_relu_backward_reduce, the same sums.
template <bool kRelu>
void backward_sums(ThreadPool& pool, const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                   const float* inv_std, const float* gamma, const float* beta, float* sum_dy, float* sum_dy_xhat) {
  const BatchNormAffine f(kRelu ? channels : 0, mean, inv_std, gamma, beta);  // without the relu: unused
  const float* scale = f.scale.data();
  const float* shift = f.shift.data();
  reduce_rows(pool, rows, channels, sum_dy, sum_dy_xhat, [&](int64_t r, auto width, double* a, double* b) {
    const float* xr = x + r * channels;
    const float* dyr = dy + r * channels;
#pragma omp simd
    for (int64_t j = 0; j < width; ++j) {
      float g = dyr[j];
      if constexpr (kRelu) g = relu_pass(affine(xr[j], scale[j], shift[j]), g);
      const double v = g;
      a[j] += v;
      b[j] += v * (xr[j] - mean[j]) * inv_std[j];
    }
  });
}

// dx from dy or (kRelu) dz, as backward_sums takes them; its factor gamma *
// inv_std is the affine map's scale.
template <bool kRelu>
void backward_apply(ThreadPool& pool, const float* dy, const float* x, int64_t rows, int64_t channels, const float* mean,
                    const float* inv_std, const float* gamma, const float* beta, const float* sum_dy,
                    const float* sum_dy_xhat, const float* count, float* dx) {
  const float inv_count = static_cast<float>(1.0 / static_cast<double>(count[0]));
  const BatchNormAffine f(channels, mean, inv_std, gamma, beta);
  const float* scale = f.scale.data();
  const float* shift = f.shift.data();
  for_each_channel_row(pool, rows, channels, [&](int64_t r, auto width) {
    const int64_t at = r * channels;
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) {
      float g = dy[at + c];
      if constexpr (kRelu) g = relu_pass(affine(x[at + c], scale[c], shift[c]), g);
      const float xhat = (x[at + c] - mean[c]) * inv_std[c];
      dx[at + c] = scale[c] * (g - inv_count * (sum_dy[c] + xhat * sum_dy_xhat[c]));
    }
  });
}
}  // namespace

void CpuBackend::batch_norm_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels,
                                            const float* mean, const float* inv_std, float* sum_dy, float* sum_dy_xhat) {
  backward_sums<false>(pool_, dy, x, rows, channels, mean, inv_std, nullptr, nullptr, sum_dy, sum_dy_xhat);
}

void CpuBackend::batch_norm_relu_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels,
                                                 const float* mean, const float* inv_std, const float* gamma,
                                                 const float* beta, float* sum_dz, float* sum_dz_xhat) {
  backward_sums<true>(pool_, dy, x, rows, channels, mean, inv_std, gamma, beta, sum_dz, sum_dz_xhat);
}

void CpuBackend::batch_norm_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels,
                                           const float* mean, const float* inv_std, const float* gamma,
                                           const float* sum_dy, const float* sum_dy_xhat, const float* count, float* dx) {
  backward_apply<false>(pool_, dy, x, rows, channels, mean, inv_std, gamma, nullptr, sum_dy, sum_dy_xhat, count, dx);
}

void CpuBackend::batch_norm_relu_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels,
                                                const float* mean, const float* inv_std, const float* gamma,
                                                const float* beta, const float* sum_dz, const float* sum_dz_xhat,
                                                const float* count, float* dx) {
  backward_apply<true>(pool_, dy, x, rows, channels, mean, inv_std, gamma, beta, sum_dz, sum_dz_xhat, count, dx);
}

}  // namespace strata
