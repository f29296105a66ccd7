// The CUDA backend's image (NHWC) kernels: im2col and its adjoint, max and
// average pooling. Each mirrors its CPU counterpart in CpuImageKernels.cpp;
// see CudaKernels.h for the rules every launcher keeps (stream order only, no
// host sync, capturable in a graph). Batch norm's and the other per-channel
// kernels are in CudaChannelKernels.cu.
//
// Determinism: no kernel here uses floating-point atomics. The adjoints
// (col2im, both pooling backwards) gather: one thread per input element walks
// the windows over it in increasing (oy, ox) order, the order in which the
// CPU's per-image scatter adds into that element, so both sum the same terms
// in the same order. Where only additions are involved (col2im, max-pool's
// backward) that gives the CPU's bits; where a product is added (average
// pooling's backward), nvcc fuses the multiply-add (--fmad=true) and the
// result may differ from the CPU's in the last place, inside the GPU check's
// tolerances.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/CudaCheck.h"
#include "backend/cuda/CudaKernels.h"
#include "backend/cuda/CudaLaunch.cuh"

namespace strata::cuda {

namespace {

// Indices of the image kernels in 32 bits when every tensor involved is
// small enough (integer division, which the index decoding is made of, is
// several times cheaper in 32 bits). 2^30 leaves room for the grid stride
// (at most kMaxBlocks * kThreads < 2^24) without overflowing the loop index.
bool fits_int32(int64_t a, int64_t b) { return std::max(a, b) <= (int64_t{1} << 30); }

// The window in the kernel's index type; with float4 elements `channels`
// counts groups of four channels.
template <typename I>
struct Win {
  I batch, height, width, channels;
  I kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left;
  I out_h, out_w;
};

template <typename I>
Win<I> narrow(const Window2D& w, int64_t vector) {
  auto n = [](int64_t v) { return static_cast<I>(v); };
  return {n(w.batch),    n(w.height),   n(w.width),    n(w.channels / vector), n(w.kernel_h), n(w.kernel_w),
          n(w.stride_h), n(w.stride_w), n(w.pad_top),  n(w.pad_left),          n(w.out_h),    n(w.out_w)};
}

// Calls fn(I{}) with the narrowest index type that holds every index.
template <typename Fn>
void with_index(bool narrow_index, Fn&& fn) {
  if (narrow_index) {
    fn(int32_t{});
  } else {
    fn(int64_t{});
  }
}

// Calls fn(I{}, T{}): T is float4 when whole groups of four channels are
// 16-byte aligned (a patch row is then a run of float4), float otherwise.
template <typename Fn>
void with_index_and_vector(bool narrow_index, bool vector, Fn&& fn) {
  with_index(narrow_index, [&](auto i) {
    if (vector) {
      fn(i, float4{});
    } else {
      fn(i, float{});
    }
  });
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Floor and ceiling of a / b for b > 0 and any sign of a (a window's first
// row may lie above the image).
template <typename I>
__device__ I floor_div(I a, I b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
template <typename I>
__device__ I ceil_div(I a, I b) {
  return floor_div<I>(a + b - 1, b);
}

__device__ void add_to(float& a, float b) { a += b; }
__device__ void add_to(float4& a, float4 b) {
  a.x += b.x;
  a.y += b.y;
  a.z += b.z;
  a.w += b.w;
}

// ---- convolution patches -----------------------------------------------------

// One thread per patch element (element = T: one channel or four). A row of
// `col` is the window's pixels in (ky, kx) order, each its channels; pixels
// in the padding are zeros.
template <typename I, typename T>
__global__ void im2col_kernel(Win<I> w, const T* __restrict__ x, T* __restrict__ col, I n) {
  STRATA_GRID_STRIDE(I, i, n) {
    I t = i / w.channels;
    const I c = i - t * w.channels;
    const I kx = t % w.kernel_w;
    t /= w.kernel_w;
    const I ky = t % w.kernel_h;
    t /= w.kernel_h;
    const I ox = t % w.out_w;
    t /= w.out_w;
    const I oy = t % w.out_h;
    const I b = t / w.out_h;
    const I iy = oy * w.stride_h - w.pad_top + ky, ix = ox * w.stride_w - w.pad_left + kx;
    const bool inside = iy >= 0 && iy < w.height && ix >= 0 && ix < w.width;
    col[i] = inside ? x[((b * w.height + iy) * w.width + ix) * w.channels + c] : T{};
  }
}

// Decodes input element i (NHWC) and the output windows [oy0, oy1] x
// [ox0, ox1] that cover its pixel (0 <= iy + pad_top - oy * stride_h <
// kernel_h, likewise in x): what every gather kernel below starts from.
template <typename I>
struct Covering {
  I b, c, iy, ix, oy0, oy1, ox0, ox1;
};
template <typename I>
__device__ Covering<I> covering_windows(const Win<I>& w, I i) {
  I t = i / w.channels;
  const I c = i - t * w.channels;
  const I ix = t % w.width;
  t /= w.width;
  const I iy = t % w.height;
  const I b = t / w.height;
  return {b, c, iy, ix, max(I{0}, ceil_div<I>(iy + w.pad_top - w.kernel_h + 1, w.stride_h)),
          min(w.out_h - 1, floor_div<I>(iy + w.pad_top, w.stride_h)),
          max(I{0}, ceil_div<I>(ix + w.pad_left - w.kernel_w + 1, w.stride_w)),
          min(w.out_w - 1, floor_div<I>(ix + w.pad_left, w.stride_w))};
}

// The adjoint of im2col as a gather: one thread per input element sums the
// patch elements that copied it, windows in increasing (oy, ox) order like
// the CPU's scatter. Every element is written, so dx needs no zeroing.
template <typename I, typename T>
__global__ void col2im_kernel(Win<I> w, const T* __restrict__ col, T* __restrict__ dx, I n) {
  const I patch = w.kernel_h * w.kernel_w * w.channels;
  STRATA_GRID_STRIDE(I, i, n) {
    const Covering<I> p = covering_windows(w, i);
    T acc{};
    for (I oy = p.oy0; oy <= p.oy1; ++oy) {
      const I ky = p.iy + w.pad_top - oy * w.stride_h;
      for (I ox = p.ox0; ox <= p.ox1; ++ox) {
        const I kx = p.ix + w.pad_left - ox * w.stride_w;
        add_to(acc, col[((p.b * w.out_h + oy) * w.out_w + ox) * patch + (ky * w.kernel_w + kx) * w.channels + p.c]);
      }
    }
    dx[i] = acc;
  }
}

// ---- pooling --------------------------------------------------------------------

// Decodes output element i (NHWC) into its channel and the image rows and
// columns [y0, y1) x [x0, x1) of its window that lie inside the image.
template <typename I>
struct PoolWindow {
  I b, c, y0, y1, x0, x1;
};
template <typename I>
__device__ PoolWindow<I> pool_window(const Win<I>& w, I i) {
  I t = i / w.channels;
  const I c = i - t * w.channels;
  const I ox = t % w.out_w;
  t /= w.out_w;
  const I oy = t % w.out_h;
  const I b = t / w.out_h;
  const I ys = oy * w.stride_h - w.pad_top, xs = ox * w.stride_w - w.pad_left;
  return {b, c, max(I{0}, ys), min(w.height, ys + w.kernel_h), max(I{0}, xs), min(w.width, xs + w.kernel_w)};
}

// The tie rule of max pooling (as on the CPU): a pixel wins when strictly
// greater, or when it is the window's first.
__device__ inline void pool_max(float v, int32_t at, float& best, int32_t& where) {
  if (v > best || where < 0) {
    best = v;
    where = at;
  }
}

// max_pool's bias and relu, as the CPU applies them: the pixel plus its
// channel's bias (one rounding, as a separate bias pass), and relu on the
// window's maximum as std::max(v, 0) (a NaN passes through).
__device__ inline float biased(float v, const float* bias, int64_t c) { return bias ? v + bias[c] : v; }
__device__ inline float pool_relu(bool relu, float v) { return relu && v < 0.0f ? 0.0f : v; }

// One thread per output element; pixels in (ky, kx) order, padding skipped.
// Tie rule as on the CPU: a pixel wins when strictly greater, or when it is
// the window's first pixel inside the image (so a NaN there stays, and a
// window entirely in the padding gives -inf and argmax -1).
template <typename I>
__global__ void max_pool_kernel(Win<I> w, const float* __restrict__ x, const float* __restrict__ bias, bool relu,
                                float* __restrict__ y, int32_t* __restrict__ argmax, I n) {
  STRATA_GRID_STRIDE(I, i, n) {
    const PoolWindow<I> p = pool_window(w, i);
    float best = -INFINITY;
    int32_t where = -1;
    for (I iy = p.y0; iy < p.y1; ++iy)
      for (I ix = p.x0; ix < p.x1; ++ix) {
        const I at = ((p.b * w.height + iy) * w.width + ix) * w.channels + p.c;
        pool_max(biased(x[at], bias, p.c), static_cast<int32_t>(at), best, where);
      }
    y[i] = pool_relu(relu, best);
    argmax[i] = where;
  }
}

// Gather: one thread per input element adds dy of every window over it whose
// argmax is this element, windows in increasing (oy, ox) order (the order of
// the CPU's scatter). Writes every element, so dx needs no zeroing.
template <typename I>
__global__ void max_pool_backward_kernel(Win<I> w, const float* __restrict__ dy, const int32_t* __restrict__ argmax,
                                         float* __restrict__ dx, I n) {
  STRATA_GRID_STRIDE(I, i, n) {
    const Covering<I> p = covering_windows(w, i);
    // argmax holds int32 flat indices; compare as the CPU's cast wrote them.
    const int32_t self = static_cast<int32_t>(i);
    float acc = 0.0f;
    for (I oy = p.oy0; oy <= p.oy1; ++oy)
      for (I ox = p.ox0; ox <= p.ox1; ++ox) {
        const I out = ((p.b * w.out_h + oy) * w.out_w + ox) * w.channels + p.c;
        if (argmax[out] == self) acc += dy[out];
      }
    dx[i] = acc;
  }
}

// Windows that tile the image (kernel == stride, no padding, every pixel in
// exactly one window: a 2x2 pool of stride 2 on an even size), four
// channels per thread (float4): no per-pixel index decoding and 16-byte
// accesses, where the general kernels above decode every element's
// position. The same results: the forward's tie rule per channel; the
// backward writes every pixel of the window, 0 + dy at the argmax (so a -0
// becomes +0, as the CPU's scatter into zeros makes it) and 0 elsewhere.
template <typename I>
struct Tile {
  I b, c4, oy, ox;
};
template <typename I>
__device__ Tile<I> tile_of(const Win<I>& w, I i) {
  I t = i / w.channels;
  const I c4 = i - t * w.channels;
  const I ox = t % w.out_w;
  t /= w.out_w;
  return {t / w.out_h, c4, t % w.out_h, ox};
}
// The float4 index of pixel (ky, kx) of tile t's window.
template <typename I>
__device__ I tile_pixel(const Win<I>& w, const Tile<I>& t, I ky, I kx) {
  return ((t.b * w.height + t.oy * w.kernel_h + ky) * w.width + t.ox * w.kernel_w + kx) * w.channels + t.c4;
}

template <typename I>
__global__ void max_pool_tiled_kernel(Win<I> w, const float4* __restrict__ x, const float* __restrict__ bias, bool relu,
                                      float4* __restrict__ y, int4* __restrict__ argmax, I n) {
  STRATA_GRID_STRIDE(I, i, n) {
    const Tile<I> t = tile_of(w, i);
    const int64_t c = int64_t{t.c4} * 4;  // the first of the thread's four channels
    float4 best = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    int4 where = make_int4(-1, -1, -1, -1);
    for (I ky = 0; ky < w.kernel_h; ++ky)
      for (I kx = 0; kx < w.kernel_w; ++kx) {
        const I at = tile_pixel(w, t, ky, kx);
        const float4 v = x[at];
        const auto flat = static_cast<int32_t>(at * 4);
        pool_max(biased(v.x, bias, c), flat, best.x, where.x);
        pool_max(biased(v.y, bias, c + 1), flat + 1, best.y, where.y);
        pool_max(biased(v.z, bias, c + 2), flat + 2, best.z, where.z);
        pool_max(biased(v.w, bias, c + 3), flat + 3, best.w, where.w);
      }
    y[i] = make_float4(pool_relu(relu, best.x), pool_relu(relu, best.y), pool_relu(relu, best.z), pool_relu(relu, best.w));
    argmax[i] = where;
  }
}

template <typename I>
__global__ void max_pool_backward_tiled_kernel(Win<I> w, const float4* __restrict__ dy, const int4* __restrict__ argmax,
                                               float4* __restrict__ dx, I n) {
  STRATA_GRID_STRIDE(I, i, n) {
    const Tile<I> t = tile_of(w, i);
    const float4 g = dy[i];
    const int4 a = argmax[i];
    for (I ky = 0; ky < w.kernel_h; ++ky)
      for (I kx = 0; kx < w.kernel_w; ++kx) {
        const I at = tile_pixel(w, t, ky, kx);
        const auto flat = static_cast<int32_t>(at * 4);
        dx[at] = make_float4(a.x == flat ? 0.0f + g.x : 0.0f, a.y == flat + 1 ? 0.0f + g.y : 0.0f,
                             a.z == flat + 2 ? 0.0f + g.z : 0.0f, a.w == flat + 3 ? 0.0f + g.w : 0.0f);
      }
  }
}

// One thread per output element: the sum of the window's in-image pixels in
// (ky, kx) order times 1 / (their count), as on the CPU (TF's "same" mean).
template <typename I>
__global__ void avg_pool_kernel(Win<I> w, const float* __restrict__ x, float* __restrict__ y, I n) {
  STRATA_GRID_STRIDE(I, i, n) {
    const PoolWindow<I> p = pool_window(w, i);
    float acc = 0.0f;
    for (I iy = p.y0; iy < p.y1; ++iy)
      for (I ix = p.x0; ix < p.x1; ++ix) acc += x[((p.b * w.height + iy) * w.width + ix) * w.channels + p.c];
    const I count = max(I{0}, p.y1 - p.y0) * max(I{0}, p.x1 - p.x0);
    y[i] = acc * (1.0f / static_cast<float>(max(I{1}, count)));
  }
}

// Gather: one thread per input element adds dy / count of every window over
// it, in increasing (oy, ox) order. Writes every element.
template <typename I>
__global__ void avg_pool_backward_kernel(Win<I> w, const float* __restrict__ dy, float* __restrict__ dx, I n) {
  STRATA_GRID_STRIDE(I, i, n) {
    const Covering<I> p = covering_windows(w, i);
    float acc = 0.0f;
    for (I oy = p.oy0; oy <= p.oy1; ++oy) {
      const I ys = oy * w.stride_h - w.pad_top;
      const I rows = min(w.height, ys + w.kernel_h) - max(I{0}, ys);
      for (I ox = p.ox0; ox <= p.ox1; ++ox) {
        const I xs = ox * w.stride_w - w.pad_left;
        const I cols = min(w.width, xs + w.kernel_w) - max(I{0}, xs);
        // The window holds this pixel, so rows, cols >= 1.
        const float inv = 1.0f / static_cast<float>(rows * cols);
        acc += dy[((p.b * w.out_h + oy) * w.out_w + ox) * w.channels + p.c] * inv;
      }
    }
    dx[i] = acc;
  }
}

}  // namespace

// ---- launchers ------------------------------------------------------------------

void im2col(cudaStream_t s, const Window2D& w, const float* x, float* col) {
  const int64_t n = w.batch * w.out_h * w.out_w * w.kernel_h * w.kernel_w * w.channels;
  if (n == 0) return;
  const bool vector = w.channels % 4 == 0 && aligned16(x) && aligned16(col);
  with_index_and_vector(fits_int32(n, w.batch * w.height * w.width * w.channels), vector, [&](auto i, auto t) {
    using I = decltype(i);
    using T = decltype(t);
    constexpr int64_t V = sizeof(T) / sizeof(float);
    im2col_kernel<I, T><<<blocks_for(n / V), kThreads, 0, s>>>(narrow<I>(w, V), reinterpret_cast<const T*>(x),
                                                                reinterpret_cast<T*>(col), static_cast<I>(n / V));
  });
  STRATA_CUDA_LAUNCHED("im2col");
}

void col2im(cudaStream_t s, const Window2D& w, const float* col, float* dx) {
  const int64_t n = w.batch * w.height * w.width * w.channels;
  if (n == 0) return;
  const bool vector = w.channels % 4 == 0 && aligned16(col) && aligned16(dx);
  const int64_t col_size = w.batch * w.out_h * w.out_w * w.kernel_h * w.kernel_w * w.channels;
  with_index_and_vector(fits_int32(n, col_size), vector, [&](auto i, auto t) {
    using I = decltype(i);
    using T = decltype(t);
    constexpr int64_t V = sizeof(T) / sizeof(float);
    col2im_kernel<I, T><<<blocks_for(n / V), kThreads, 0, s>>>(narrow<I>(w, V), reinterpret_cast<const T*>(col),
                                                                reinterpret_cast<T*>(dx), static_cast<I>(n / V));
  });
  STRATA_CUDA_LAUNCHED("col2im");
}

namespace {
// Whether the tiled kernels take this window and these tensors.
bool tiled(const Window2D& w, const void* a, const void* b, const void* c) {
  return w.kernel_h == w.stride_h && w.kernel_w == w.stride_w && w.pad_top == 0 && w.pad_left == 0 &&
         w.height == w.out_h * w.kernel_h && w.width == w.out_w * w.kernel_w && w.channels % 4 == 0 && aligned16(a) &&
         aligned16(b) && aligned16(c);
}
}  // namespace

void max_pool(cudaStream_t s, const Window2D& w, const float* x, const float* bias, bool relu, float* y, int32_t* argmax) {
  const int64_t n = w.batch * w.out_h * w.out_w * w.channels;
  if (n == 0) return;
  if (tiled(w, x, y, argmax)) {
    with_index(fits_int32(n, w.batch * w.height * w.width * w.channels), [&](auto i) {
      using I = decltype(i);
      max_pool_tiled_kernel<I><<<blocks_for(n / 4), kThreads, 0, s>>>(narrow<I>(w, 4), reinterpret_cast<const float4*>(x),
                                                                      bias, relu, reinterpret_cast<float4*>(y),
                                                                      reinterpret_cast<int4*>(argmax), static_cast<I>(n / 4));
    });
    STRATA_CUDA_LAUNCHED("max_pool");
    return;
  }
  with_index(fits_int32(n, w.batch * w.height * w.width * w.channels), [&](auto i) {
    using I = decltype(i);
    max_pool_kernel<I><<<blocks_for(n), kThreads, 0, s>>>(narrow<I>(w, 1), x, bias, relu, y, argmax, static_cast<I>(n));
  });
  STRATA_CUDA_LAUNCHED("max_pool");
}

void max_pool_backward(cudaStream_t s, const Window2D& w, const float* dy, const int32_t* argmax, float* dx) {
  const int64_t n = w.batch * w.height * w.width * w.channels;
  if (n == 0) return;
  if (tiled(w, dy, argmax, dx)) {
    const int64_t outputs = w.batch * w.out_h * w.out_w * w.channels;
    with_index(fits_int32(n, outputs), [&](auto i) {
      using I = decltype(i);
      max_pool_backward_tiled_kernel<I>
          <<<blocks_for(outputs / 4), kThreads, 0, s>>>(narrow<I>(w, 4), reinterpret_cast<const float4*>(dy),
                                                        reinterpret_cast<const int4*>(argmax), reinterpret_cast<float4*>(dx),
                                                        static_cast<I>(outputs / 4));
    });
    STRATA_CUDA_LAUNCHED("max_pool_backward");
    return;
  }
  with_index(fits_int32(n, w.batch * w.out_h * w.out_w * w.channels), [&](auto i) {
    using I = decltype(i);
    max_pool_backward_kernel<I><<<blocks_for(n), kThreads, 0, s>>>(narrow<I>(w, 1), dy, argmax, dx, static_cast<I>(n));
  });
  STRATA_CUDA_LAUNCHED("max_pool_backward");
}

void avg_pool(cudaStream_t s, const Window2D& w, const float* x, float* y) {
  const int64_t n = w.batch * w.out_h * w.out_w * w.channels;
  if (n == 0) return;
  with_index(fits_int32(n, w.batch * w.height * w.width * w.channels), [&](auto i) {
    using I = decltype(i);
    avg_pool_kernel<I><<<blocks_for(n), kThreads, 0, s>>>(narrow<I>(w, 1), x, y, static_cast<I>(n));
  });
  STRATA_CUDA_LAUNCHED("avg_pool");
}

void avg_pool_backward(cudaStream_t s, const Window2D& w, const float* dy, float* dx) {
  const int64_t n = w.batch * w.height * w.width * w.channels;
  if (n == 0) return;
  with_index(fits_int32(n, w.batch * w.out_h * w.out_w * w.channels), [&](auto i) {
    using I = decltype(i);
    avg_pool_backward_kernel<I><<<blocks_for(n), kThreads, 0, s>>>(narrow<I>(w, 1), dy, dx, static_cast<I>(n));
  });
  STRATA_CUDA_LAUNCHED("avg_pool_backward");
}

}  // namespace strata::cuda
