#include "backend/cpu/CpuBackend.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <cmath>
#include <mutex>
#if defined(__SSE__)
#include <immintrin.h>  // _mm_stream_ps: WeightStores::Streamed
#endif

#include "backend/cpu/ReluPass.h"
#include "core/Denormals.h"
#include "core/Device.h"
#include "core/Error.h"
#include "core/HostAllocator.h"
#include "core/Rng.h"
#ifdef STRATA_WITH_DNNL
#include <dnnl.h>
#include <omp.h>

#include "backend/cpu/DnnlConvolution.h"
#endif

namespace strata {

namespace {
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMat>;
using Map = Eigen::Map<RowMat>;
using ArrMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrMap = Eigen::Map<const Eigen::ArrayXf>;

// Element-wise kernels below this size stay on the calling thread: a hand-off
// costs more than the work.
constexpr int64_t kElementGrain = 1 << 15;

template <typename Lhs, typename Rhs>
void gemm_block(Map c, const Lhs& a, const Rhs& b, float alpha, float beta) {
  if (beta == 0.0f) {
    c.noalias() = alpha * (a * b);
  } else {
    if (beta != 1.0f) c *= beta;
    c.noalias() += alpha * (a * b);
  }
}
}  // namespace

CpuBackend::CpuBackend(int threads, int device_index) : pool_(threads), device_index_(device_index) {
#ifdef STRATA_WITH_DNNL
  dnnl_ = std::make_shared<DnnlConvolution>(pool_);
#endif
  enable_flush_denormals();
}

CpuBackend::~CpuBackend() = default;

#ifdef STRATA_WITH_DNNL
bool CpuBackend::has_conv2d(const Window2D& w, int64_t) { return DnnlConvolution::supports(w); }
void CpuBackend::conv2d(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) {
  dnnl_->forward(w, filters, x, kernel, y);
}
void CpuBackend::conv2d_backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx) {
  dnnl_->backward_data(w, filters, dy, kernel, dx);
}
void CpuBackend::conv2d_backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy, float* dkernel) {
  dnnl_->backward_filter(w, filters, x, dy, dkernel);
}
#else
bool CpuBackend::has_conv2d(const Window2D&, int64_t) { return false; }
void CpuBackend::conv2d(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) {
  Backend::conv2d(w, filters, x, kernel, y);
}
void CpuBackend::conv2d_backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx) {
  Backend::conv2d_backward_data(w, filters, dy, kernel, dx);
}
void CpuBackend::conv2d_backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy, float* dkernel) {
  Backend::conv2d_backward_filter(w, filters, x, dy, dkernel);
}
#endif

// ---- memory: the host's, so every call is complete when it returns ---------

void* CpuBackend::allocate(size_t bytes) {
  void* p = HostAllocator::instance().allocate(bytes);
  if (!p) throw runtime_error("out of host memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

void CpuBackend::deallocate(void* p, size_t bytes) { HostAllocator::instance().deallocate(p, bytes); }
void CpuBackend::copy_from_host(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuBackend::copy_to_host(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuBackend::copy(void* dst, const void* src, size_t bytes) {
  if (dst != src) std::memcpy(dst, src, bytes);
}
void CpuBackend::fill32(void* dst, int64_t n, uint32_t word) {
  auto* p = static_cast<uint32_t*>(dst);
  std::fill(p, p + n, word);
}

void CpuBackend::gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                      const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // An empty product (a replica with no examples): C = beta * C, and C is
    // not read when beta is 0 (it may hold garbage, even NaN).
    if (beta == 0.0f) std::fill(c, c + m * n, 0.0f);
    else axpby(m * n, 0.0f, c, beta, c);
    return;
  }
  ConstMap A(a, trans_a ? k : m, trans_a ? m : k);
  ConstMap B(b, trans_b ? n : k, trans_b ? k : n);
  // Split the larger output dimension; each thread owns whole output
  // elements, so no reduction across threads is needed.
  const bool split_rows = m >= n;
  const int64_t extent = split_rows ? m : n;
  const int64_t flops_per_unit = (split_rows ? n : m) * k;
  const int64_t grain = std::max<int64_t>(16, (int64_t{1} << 18) / std::max<int64_t>(1, flops_per_unit));
#ifdef STRATA_WITH_DNNL
  // oneDNN's sgemm (JIT kernels for this CPU) on each block, one thread per
  // call: 1.3-1.5x Eigen's product on the dense layers' shapes at batch 64
  // and 128 (measured on the development machine, AVX2), as PyTorch uses an
  // optimised BLAS there. Row-major, like the tensors; with beta 0 it does
  // not read C, as Eigen's path does not.
  const char ta = trans_a ? 'T' : 'N', tb = trans_b ? 'T' : 'N';
  const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;
  pool_.parallel_for(extent, grain, [&](int64_t lo, int64_t hi) {
    omp_set_num_threads(1);  // per calling thread: the pool divides the work
    // Rows [lo, hi) of op(A) with all of op(B), or all of op(A) with columns [lo, hi) of op(B).
    const dnnl_status_t status = split_rows ? dnnl_sgemm(ta, tb, hi - lo, n, k, alpha, trans_a ? a + lo : a + lo * k, lda, b,
                                                         ldb, beta, c + lo * n, n)
                                            : dnnl_sgemm(ta, tb, m, hi - lo, k, alpha, a, lda, trans_b ? b + lo * k : b + lo,
                                                         ldb, beta, c + lo, n);
    if (status != dnnl_success)
      throw runtime_error("oneDNN sgemm (" + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                          ") failed with status " + std::to_string(static_cast<int>(status)));
  });
  return;
#endif
  pool_.parallel_for(extent, grain, [&](int64_t lo, int64_t hi) {
    const int64_t len = hi - lo;
    if (split_rows) {
      // Rows [lo, hi) of C are contiguous in row-major storage.
      Map C(c + lo * n, len, n);
      auto run = [&](const auto& opA, const auto& opB) { gemm_block(C, opA.middleRows(lo, len), opB, alpha, beta); };
      if (trans_a && trans_b) run(A.transpose(), B.transpose());
      else if (trans_a) run(A.transpose(), B);
      else if (trans_b) run(A, B.transpose());
      else run(A, B);
    } else {
      Eigen::Map<RowMat, 0, Eigen::OuterStride<>> Cfull(c + lo, m, len, Eigen::OuterStride<>(n));
      auto run = [&](const auto& opA, const auto& opB) {
        const auto blk = opB.middleCols(lo, len);
        if (beta == 0.0f) {
          Cfull.noalias() = alpha * (opA * blk);
        } else {
          if (beta != 1.0f) Cfull *= beta;
          Cfull.noalias() += alpha * (opA * blk);
        }
      };
      if (trans_a && trans_b) run(A.transpose(), B.transpose());
      else if (trans_a) run(A.transpose(), B);
      else if (trans_b) run(A, B.transpose());
      else run(A, B);
    }
  });
}

void CpuBackend::add_bias_rows(float* y, const float* bias, int64_t rows, int64_t cols) {
  pool_.parallel_for(rows, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, cols)), [&](int64_t lo, int64_t hi) {
    Map Y(y + lo * cols, hi - lo, cols);
    Eigen::Map<const Eigen::RowVectorXf> B(bias, cols);
    Y.rowwise() += B;
  });
}

void CpuBackend::sum_rows(const float* x, int64_t rows, int64_t cols, float* out, bool accumulate) {
  // Parallel over columns so every output element is summed by one thread in
  // row order: the same bits whatever the thread count.
  pool_.parallel_for(cols, std::max<int64_t>(16, kElementGrain / std::max<int64_t>(1, rows)), [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c)
      if (!accumulate) out[c] = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * cols;
      for (int64_t c = lo; c < hi; ++c) out[c] += row[c];
    }
  });
}

void CpuBackend::activation_forward(Activation act, const float* x, float* y, int64_t rows, int64_t cols) {
  if (act == Activation::Softmax) {
    pool_.parallel_for(rows, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, cols)), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float mx = *std::max_element(xr, xr + cols);
        float s = 0.0f;
        for (int64_t c = 0; c < cols; ++c) s += (yr[c] = std::exp(xr[c] - mx));
        const float inv = 1.0f / s;
        for (int64_t c = 0; c < cols; ++c) yr[c] *= inv;
      }
    });
    return;
  }
  const int64_t n = rows * cols;
  pool_.parallel_for(n, kElementGrain, [&](int64_t lo, int64_t hi) {
    ConstArrMap X(x + lo, hi - lo);
    ArrMap Y(y + lo, hi - lo);
    switch (act) {
      case Activation::None: Y = X; break;
      case Activation::Relu: Y = X.max(0.0f); break;
      case Activation::Tanh: Y = X.tanh(); break;
      case Activation::Sigmoid: Y = X.logistic(); break;
      case Activation::Softmax: break;
    }
  });
}

void CpuBackend::activation_backward(Activation act, const float* y, const float* dy, float* dx, int64_t rows,
                                     int64_t cols) {
  if (act == Activation::Softmax) {
    // dx = y * (dy - sum(dy * y)) per row.
    pool_.parallel_for(rows, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, cols)), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const float* yr = y + r * cols;
        const float* gr = dy + r * cols;
        float dot = 0.0f;
        for (int64_t c = 0; c < cols; ++c) dot += yr[c] * gr[c];
        float* out = dx + r * cols;
        for (int64_t c = 0; c < cols; ++c) out[c] = yr[c] * (gr[c] - dot);
      }
    });
    return;
  }
  const int64_t n = rows * cols;
  pool_.parallel_for(n, kElementGrain, [&](int64_t lo, int64_t hi) {
    ConstArrMap Y(y + lo, hi - lo);
    ConstArrMap G(dy + lo, hi - lo);
    ArrMap D(dx + lo, hi - lo);
    switch (act) {
      case Activation::None: D = G; break;
      case Activation::Relu:
        // y the relu's output; dx may be dy itself (each element read before it is written).
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) dx[i] = relu_pass(y[i], dy[i]);
        break;
      case Activation::Tanh: D = G * (1.0f - Y.square()); break;
      case Activation::Sigmoid: D = G * Y * (1.0f - Y); break;
      case Activation::Softmax: break;
    }
  });
}

void CpuBackend::sparse_softmax_xent(const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                     float* loss, float* dlogits) {
  pool_.parallel_for(rows, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, cols)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* x = logits + r * cols;
      const int32_t label = labels[r];
      if (label < 0 || label >= cols) {
        // Reported through check_labels' flag; never read outside the row.
        loss[r] = 0.0f;
        if (dlogits) std::fill(dlogits + r * cols, dlogits + (r + 1) * cols, 0.0f);
        continue;
      }
      const float mx = *std::max_element(x, x + cols);
      float s = 0.0f;
      for (int64_t c = 0; c < cols; ++c) s += std::exp(x[c] - mx);
      const float lse = mx + std::log(s);
      loss[r] = lse - x[label];
      if (dlogits) {
        float* d = dlogits + r * cols;
        for (int64_t c = 0; c < cols; ++c) d[c] = std::exp(x[c] - lse);
        d[label] -= 1.0f;
      }
    }
  });
}

void CpuBackend::softmax_xent(const float* logits, const float* targets, int64_t rows, int64_t cols, float* loss,
                              float* dlogits) {
  pool_.parallel_for(rows, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, cols)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* x = logits + r * cols;
      const float* t = targets + r * cols;
      const float mx = *std::max_element(x, x + cols);
      float s = 0.0f, tsum = 0.0f;
      for (int64_t c = 0; c < cols; ++c) {
        s += std::exp(x[c] - mx);
        tsum += t[c];
      }
      const float lse = mx + std::log(s);
      float l = 0.0f;
      for (int64_t c = 0; c < cols; ++c) l += t[c] * (lse - x[c]);
      loss[r] = l;
      if (dlogits) {
        float* d = dlogits + r * cols;
        for (int64_t c = 0; c < cols; ++c) d[c] = tsum * std::exp(x[c] - lse) - t[c];
      }
    }
  });
}

void CpuBackend::axpby(int64_t n, float alpha, const float* x, float beta, float* y) {
  pool_.parallel_for(n, kElementGrain, [&](int64_t lo, int64_t hi) {
    ArrMap Y(y + lo, hi - lo);
    ConstArrMap X(x + lo, hi - lo);
    if (beta == 0.0f) Y = alpha * X;
    else Y = alpha * X + beta * Y;
  });
}

void CpuBackend::dropout(int64_t n, float rate, uint64_t seed, uint64_t stream, const int32_t* call, uint64_t counter,
                         const float* x, float* y, float* mask) {
  const uint64_t key = hash_combine(seed, (uint64_t{static_cast<uint32_t>(call[0])} << 16) ^ stream);
  const float scale = rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
  pool_.parallel_for(n, kElementGrain, [&](int64_t lo, int64_t hi) {
    // The draws first, a block at a time into a local array: a loop of
    // nothing but the hash, which the compiler vectorises (64-bit multiplies
    // where the CPU has them), unlike one that also stores through two
    // pointers that might alias x. The same numbers either way.
    // The mask loop likewise works on locals and restrict pointers: through
    // the captured references it reloaded rate and the pointers after every
    // store and ran scalar, three quarters of dropout's time.
    constexpr int64_t kBlock = 256;
    alignas(64) float u[kBlock];
    const uint64_t k = key;
    const float r = rate, s = scale;
    for (int64_t b = lo; b < hi; b += kBlock) {
      const int64_t len = std::min(kBlock, hi - b);
      const uint64_t first = counter + static_cast<uint64_t>(b);
      for (int64_t i = 0; i < len; ++i) u[i] = uniform01(k, first + static_cast<uint64_t>(i));
      const float* __restrict xb = x + b;
      float* __restrict mb = mask + b;
      float* __restrict yb = y + b;
      for (int64_t i = 0; i < len; ++i) {
        const float m = u[i] >= r ? s : 0.0f;
        mb[i] = m;
        yb[i] = xb[i] * m;
      }
    }
  });
}

void CpuBackend::mul(int64_t n, const float* a, const float* b, float* y) {
  pool_.parallel_for(n, kElementGrain, [&](int64_t lo, int64_t hi) {
    ArrMap(y + lo, hi - lo) = ConstArrMap(a + lo, hi - lo) * ConstArrMap(b + lo, hi - lo);
  });
}

void CpuBackend::scale_rows(const float* x, const float* scale, int64_t rows, int64_t cols, float* y) {
  pool_.parallel_for(rows, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, cols)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float s = scale[r];
      for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = s * x[r * cols + c];
    }
  });
}

void CpuBackend::log_clamp(int64_t n, const float* x, float eps, float* y) {
  pool_.parallel_for(n, kElementGrain, [&](int64_t lo, int64_t hi) {
    ArrMap(y + lo, hi - lo) = ConstArrMap(x + lo, hi - lo).max(eps).min(1.0f - eps).log();
  });
}

void CpuBackend::log_clamp_backward(int64_t n, const float* x, float eps, const float* dy, float* dx) {
  pool_.parallel_for(n, kElementGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) dx[i] = (x[i] >= eps && x[i] <= 1.0f - eps) ? dy[i] / x[i] : 0.0f;
  });
}

void CpuBackend::pixels_to_float(int64_t rows, int64_t features, const uint8_t* in, float scale, const float* mean,
                                 const float* inv_std, float* out) {
  // The same float operations, in the same order, as Dataset::gather.
  pool_.parallel_for(rows, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, features)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const uint8_t* src = in + r * features;
      float* row = out + r * features;
      for (int64_t k = 0; k < features; ++k) row[k] = static_cast<float>(src[k]) * scale;
      if (mean)
        for (int64_t k = 0; k < features; ++k) row[k] = (row[k] - mean[k]) * inv_std[k];
    }
  });
}

void CpuBackend::gather_rows(const uint8_t* table, int64_t row_bytes, const int32_t* rows, int64_t n, uint8_t* out) {
  if (row_bytes <= 0) return;  // nothing to copy (and an empty table's pointer may be null: memcpy forbids it)
  pool_.parallel_for(n, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, row_bytes)), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      std::memcpy(out + i * row_bytes, table + static_cast<int64_t>(rows[i]) * row_bytes, static_cast<size_t>(row_bytes));
  });
}

void CpuBackend::scaled_sum(int64_t n, const float* x, const float* scale, float* out) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  out[0] = static_cast<float>(s * scale[0]);
}

void CpuBackend::broadcast_scaled(int64_t n, const float* g, const float* scale, float* y) {
  std::fill(y, y + n, g[0] * scale[0]);
}

void CpuBackend::add_scalar(int64_t n, float value, float* x) {
  for (int64_t i = 0; i < n; ++i) x[i] += value;
}

void CpuBackend::increment(int64_t n, int32_t* x) {
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<int32_t>(static_cast<uint32_t>(x[i]) + 1u);
}

namespace {
// The first column holding the row's largest value.
int32_t row_argmax(const float* p, int64_t cols) {
  int64_t best = 0;
  for (int64_t c = 1; c < cols; ++c)
    if (p[c] > p[best]) best = c;
  return static_cast<int32_t>(best);
}
}  // namespace

void CpuBackend::argmax_rows(const float* x, int64_t rows, int64_t cols, int32_t* out) {
  for (int64_t r = 0; r < rows; ++r) out[r] = row_argmax(x + r * cols, cols);
}

void CpuBackend::count_correct(const float* predictions, const int32_t* labels, int64_t rows, int64_t cols,
                               float* count) {
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; ++r) correct += row_argmax(predictions + r * cols, cols) == labels[r];
  count[0] += static_cast<float>(correct);
}

void CpuBackend::check_labels(const int32_t* labels, int64_t n, int64_t classes, float* error) {
  for (int64_t i = 0; i < n; ++i)
    if (labels[i] < 0 || labels[i] >= classes) {
      if (error[0] == 0.0f) error[1] = static_cast<float>(labels[i]);
      error[0] += 1.0f;
    }
}

namespace {
// One Adam pass over n elements. A function of its own with restrict
// pointers: inlined into parallel_for's lambda GCC did not vectorise it.
void adam_range(int64_t n, float* __restrict w, const float* __restrict g, float* __restrict m, float* __restrict v,
                float alpha, float one_b1, float one_b2, float eps) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = m[i] + (gi - m[i]) * one_b1;
    const float vi = v[i] + (gi * gi - v[i]) * one_b2;
    m[i] = mi;
    v[i] = vi;
    w[i] -= alpha * mi / (std::sqrt(vi) + eps);
  }
}

// Keras: v = momentum * v - lr * g; w += v (Nesterov: w += momentum * v - lr * g).
// Without momentum (v null) w -= lr * g.
void sgd_range(int64_t n, float* __restrict w, const float* __restrict g, float* __restrict v, float lr, float momentum,
               bool nesterov) {
  if (v == nullptr) {
    for (int64_t i = 0; i < n; ++i) w[i] -= lr * g[i];
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float vi = momentum * v[i] - lr * g[i];
    v[i] = vi;
    w[i] += nesterov ? momentum * vi - lr * g[i] : vi;
  }
}

// Runs `update(block, i, k)`, an in-place update of w[i, i + k) given as
// `block`, over w[0, n). Cached: on w itself. Streamed (WeightStores): on a
// small buffer holding a copy of each block, which is then written to w with
// non-temporal stores, so the same arithmetic gives the same bits.
template <typename F>
void update_weights(float* w, int64_t n, WeightStores stores, F&& update) {
  if (stores == WeightStores::Cached) {
    update(w, 0, n);
    return;
  }
  constexpr int64_t kBlock = 256;  // 1 KiB: stays in L1
  alignas(64) float block[kBlock];
  // In place up to the first cache line boundary: streamed stores combine
  // into whole lines from there.
  const auto misaligned = static_cast<int64_t>(reinterpret_cast<uintptr_t>(w) % 64 / sizeof(float));
  const int64_t head = std::min<int64_t>(n, (16 - misaligned) % 16);
  if (head > 0) update(w, 0, head);
  for (int64_t i = head; i < n; i += kBlock) {
    const int64_t k = std::min(kBlock, n - i);
    std::memcpy(block, w + i, static_cast<size_t>(k) * sizeof(float));
    update(block, i, k);
    int64_t j = 0;
#if defined(__SSE__)
    for (; j + 4 <= k; j += 4) _mm_stream_ps(w + i + j, _mm_load_ps(block + j));
#endif
    for (; j < k; ++j) w[i + j] = block[j];
  }
#if defined(__SSE__)
  _mm_sfence();  // streamed stores are weakly ordered: done before this thread reports its part finished
#endif
}
}  // namespace

void CpuBackend::sgd_update(int64_t n, float* w, const float* g, float* velocity, const float* lr_ptr, float momentum,
                            bool nesterov, WeightStores stores) {
  // One pass over the arrays, the same loop as the CUDA kernel.
  const float lr = lr_ptr[0];
  float* v = momentum == 0.0f ? nullptr : velocity;
  pool_.parallel_for(n, kElementGrain, [&](int64_t lo, int64_t hi) {
    update_weights(w + lo, hi - lo, stores, [&](float* block, int64_t i, int64_t k) {
      sgd_range(k, block, g + lo + i, v ? v + lo + i : nullptr, lr, momentum, nesterov);
    });
  });
}

void CpuBackend::adam_update(int64_t n, float* w, const float* g, float* m, float* v, const AdamParams& p,
                             const float* lr_step, WeightStores stores) {
  // Keras' formulation: the bias correction folds into the step size and
  // epsilon is added to sqrt(v) uncorrected ("epsilon hat").
  const double lr = lr_step[0], step = lr_step[1];
  const double b1t = std::pow(static_cast<double>(p.beta1), step);
  const double b2t = std::pow(static_cast<double>(p.beta2), step);
  const float alpha = static_cast<float>(lr * std::sqrt(1.0 - b2t) / (1.0 - b1t));
  const float one_b1 = 1.0f - p.beta1, one_b2 = 1.0f - p.beta2;
  // One pass: each element's four values are read once and written back.
  // Three Eigen expressions read the arrays from memory seven times, and the
  // update is memory-bound: its span in a one_device MLP step fell from ~450
  // to ~230 us. The sqrt is exact (Eigen's vectorised one is approximate, so
  // its bits depended on the arrays' alignment), as in the CUDA kernel.
  pool_.parallel_for(n, kElementGrain, [&](int64_t lo, int64_t hi) {
    update_weights(w + lo, hi - lo, stores, [&](float* block, int64_t i, int64_t k) {
      adam_range(k, block, g + lo + i, m + lo + i, v + lo + i, alpha, one_b1, one_b2, p.epsilon);
    });
  });
}

}  // namespace strata
