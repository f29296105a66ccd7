// Every CpuBackend kernel against a naive reference loop (in double) on fresh
// random inputs, with 1 and 2 threads, outputs poisoned with NaN first; the
// optimizers against Keras' formulas; bit-identical training for a fixed
// seed and thread count.
#include <QtTest/QtTest>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "TestUtil.h"
#include "backend/cpu/CpuBackend.h"
#include "core/Rng.h"
#include "core/Tensor.h"
#include "nn/Dense.h"
#include "nn/Dropout.h"
#include "nn/GradientTape.h"
#include "nn/Loss.h"
#include "nn/Metrics.h"
#include "nn/Optimizer.h"
#include "nn/Sequential.h"

using namespace strata;
using testutil::compare;
using testutil::nan_vector;
using testutil::random_vector;

namespace {

// Sizes above the element-wise grain (1 << 15) so two threads really split.
constexpr int64_t kBig = 100003;

// A second copy of the weights (and zeroed optimizer state) for WeightStores::Streamed,
// which must give the same bits as Cached. It starts 12 bytes past a
// 16-byte boundary, so the part before the first cache line is covered too.
class Streamed {
public:
  Streamed(const std::vector<float>& w, int states) : w_(w.size() + 3) {
    std::copy(w.begin(), w.end(), w_.begin() + 3);
    for (int k = 0; k < states; ++k) states_.emplace_back(w.size() + 3, 0.0f);
  }
  float* w() { return w_.data() + 3; }
  float* state(int k) { return states_[static_cast<size_t>(k)].data() + 3; }
  std::vector<float> weights() const { return {w_.begin() + 3, w_.end()}; }

private:
  std::vector<float> w_;
  std::vector<std::vector<float>> states_;
};

constexpr int64_t kSizes[] = {1, 7, 1000, kBig};

struct GemmShape {
  int64_t m, n, k;
};
// Odd sizes, a 1x1x1, one that splits rows across threads and one that splits columns.
const GemmShape kGemmShapes[] = {{1, 1, 1}, {3, 5, 7}, {17, 1, 9}, {1, 13, 4}, {33, 17, 129},
                                 {300, 40, 50}, {20, 1000, 30}, {64, 64, 64}};

std::vector<double> ref_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const std::vector<float>& a,
                             const std::vector<float>& b, float beta, const std::vector<float>& c) {
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = ta ? a[static_cast<size_t>(p * m + i)] : a[static_cast<size_t>(i * k + p)];
        const double bv = tb ? b[static_cast<size_t>(j * k + p)] : b[static_cast<size_t>(p * n + j)];
        s += av * bv;
      }
      out[static_cast<size_t>(i * n + j)] = alpha * s + (beta == 0.0f ? 0.0 : beta * static_cast<double>(c[static_cast<size_t>(i * n + j)]));
    }
  return out;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::vector<double> ref_softmax_row(const float* x, int64_t cols) {
  double mx = x[0];
  for (int64_t c = 1; c < cols; ++c) mx = std::max(mx, static_cast<double>(x[c]));
  std::vector<double> y(static_cast<size_t>(cols));
  double s = 0;
  for (int64_t c = 0; c < cols; ++c) s += (y[static_cast<size_t>(c)] = std::exp(x[c] - mx));
  for (auto& v : y) v /= s;
  return y;
}

}  // namespace

class TestKernels : public QObject {
  Q_OBJECT

private slots:
  void initTestCase() { qInfo("random seed %llu (set STRATA_TEST_SEED to replay)", static_cast<unsigned long long>(testutil::process_seed())); }

  void gemm() {
    for (int threads : {1, 2}) {
      CpuBackend be(threads);
      for (auto s : kGemmShapes)
        for (bool ta : {false, true})
          for (bool tb : {false, true})
            for (float beta : {0.0f, 1.0f, 0.5f}) {
              const float alpha = beta == 0.5f ? -1.5f : 1.0f;
              auto a = random_vector(static_cast<size_t>(s.m * s.k));
              auto b = random_vector(static_cast<size_t>(s.k * s.n));
              // beta == 0: C must not be read, so NaN must not leak through.
              auto c = beta == 0.0f ? nan_vector(static_cast<size_t>(s.m * s.n)) : random_vector(static_cast<size_t>(s.m * s.n));
              auto want = ref_gemm(ta, tb, s.m, s.n, s.k, alpha, a, b, beta, c);
              be.gemm(ta, tb, s.m, s.n, s.k, alpha, a.data(), b.data(), beta, c.data());
              const QString what = QString("gemm threads=%1 m=%2 n=%3 k=%4 ta=%5 tb=%6 beta=%7")
                                       .arg(threads).arg(s.m).arg(s.n).arg(s.k).arg(ta).arg(tb).arg(beta);
              STRATA_COMPARE_OK(compare(c, want, 2e-6 * static_cast<double>(s.k) + 1e-5, 1e-5, what.toStdString()));
            }
    }
  }

  void gemm_empty_k() {
    // k == 0: C = beta * C; with beta 0, C is overwritten even if it holds NaN.
    CpuBackend be(2);
    auto c = nan_vector(12);
    be.gemm(false, false, 3, 4, 0, 1.0f, nullptr, nullptr, 0.0f, c.data());
    STRATA_COMPARE_OK(compare(c, std::vector<double>(12, 0.0), 0, 0, "k=0 beta=0"));
    auto c2 = random_vector(12);
    std::vector<double> want(c2.begin(), c2.end());
    for (auto& v : want) v *= 2.0;
    be.gemm(true, true, 3, 4, 0, 1.0f, nullptr, nullptr, 2.0f, c2.data());
    STRATA_COMPARE_OK(compare(c2, want, 1e-6, 1e-6, "k=0 beta=2"));
  }

  void add_bias_rows() {
    for (int threads : {1, 2})
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {7, 3}, {5000, 13}, {3, 40001}}) {
        CpuBackend be(threads);
        auto y = random_vector(static_cast<size_t>(rows * cols));
        auto bias = random_vector(static_cast<size_t>(cols));
        std::vector<double> want(y.size());
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            want[static_cast<size_t>(r * cols + c)] = double(y[static_cast<size_t>(r * cols + c)]) + bias[static_cast<size_t>(c)];
        be.add_bias_rows(y.data(), bias.data(), rows, cols);
        STRATA_COMPARE_OK(compare(y, want, 1e-6, 1e-6, "add_bias_rows"));
      }
  }

  void sum_rows() {
    for (int threads : {1, 2})
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {7, 3}, {4, 20000}, {3001, 17}})
        for (bool accumulate : {false, true}) {
          CpuBackend be(threads);
          auto x = random_vector(static_cast<size_t>(rows * cols));
          auto out = accumulate ? random_vector(static_cast<size_t>(cols)) : nan_vector(static_cast<size_t>(cols));
          std::vector<double> want(static_cast<size_t>(cols));
          for (int64_t c = 0; c < cols; ++c) {
            double s = accumulate ? out[static_cast<size_t>(c)] : 0.0;
            for (int64_t r = 0; r < rows; ++r) s += x[static_cast<size_t>(r * cols + c)];
            want[static_cast<size_t>(c)] = s;
          }
          be.sum_rows(x.data(), rows, cols, out.data(), accumulate);
          STRATA_COMPARE_OK(compare(out, want, 1e-6 * static_cast<double>(rows) + 1e-6, 1e-5,
                                    "sum_rows accumulate=" + std::to_string(accumulate)));
        }
  }

  void sum_rows_independent_of_threads() {
    // Each column is summed in row order by one thread: identical bits.
    auto x = random_vector(3001 * 17);
    std::vector<float> o1(17), o2(17);
    CpuBackend b1(1), b2(2);
    b1.sum_rows(x.data(), 3001, 17, o1.data(), false);
    b2.sum_rows(x.data(), 3001, 17, o2.data(), false);
    STRATA_COMPARE_OK(testutil::identical(o1, o2, "sum_rows 1 vs 2 threads"));
  }

  void activation_forward_backward() {
    const Activation acts[] = {Activation::None, Activation::Relu, Activation::Tanh, Activation::Sigmoid, Activation::Softmax};
    for (int threads : {1, 2})
      for (auto act : acts)
        for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {5, 7}, {4000, 10}, {2, 50001}})
          for (bool in_place : {false, true}) {
            CpuBackend be(threads);
            const size_t n = static_cast<size_t>(rows * cols);
            auto x = random_vector(n, -4.0f, 4.0f);
            std::vector<double> want(n);
            for (int64_t r = 0; r < rows; ++r) {
              const float* xr = x.data() + r * cols;
              auto sm = act == Activation::Softmax ? ref_softmax_row(xr, cols) : std::vector<double>{};
              for (int64_t c = 0; c < cols; ++c) {
                const double v = xr[c];
                double y = v;
                switch (act) {
                  case Activation::None: y = v; break;
                  case Activation::Relu: y = v > 0 ? v : 0; break;
                  case Activation::Tanh: y = std::tanh(v); break;
                  case Activation::Sigmoid: y = sigmoid(v); break;
                  case Activation::Softmax: y = sm[static_cast<size_t>(c)]; break;
                }
                want[static_cast<size_t>(r * cols + c)] = y;
              }
            }
            std::vector<float> y = in_place ? x : nan_vector(n);
            be.activation_forward(act, in_place ? y.data() : x.data(), y.data(), rows, cols);
            const std::string what = "activation_forward act=" + std::to_string(int(act)) + " rows=" + std::to_string(rows) +
                                     " cols=" + std::to_string(cols) + " threads=" + std::to_string(threads);
            STRATA_COMPARE_OK(compare(y, want, 2e-6, 2e-5, what));

            // Backward from y: dx = dy * act'(x).
            auto dy = random_vector(n);
            std::vector<double> dwant(n);
            for (int64_t r = 0; r < rows; ++r) {
              double dot = 0;
              for (int64_t c = 0; c < cols; ++c) dot += double(y[static_cast<size_t>(r * cols + c)]) * dy[static_cast<size_t>(r * cols + c)];
              for (int64_t c = 0; c < cols; ++c) {
                const size_t i = static_cast<size_t>(r * cols + c);
                const double yv = y[i], g = dy[i], xv = x[i];
                switch (act) {
                  case Activation::None: dwant[i] = g; break;
                  case Activation::Relu: dwant[i] = xv > 0 ? g : 0; break;
                  case Activation::Tanh: dwant[i] = g * (1 - yv * yv); break;
                  case Activation::Sigmoid: dwant[i] = g * yv * (1 - yv); break;
                  case Activation::Softmax: dwant[i] = yv * (g - dot); break;
                }
              }
            }
            auto dx = nan_vector(n);
            be.activation_backward(act, y.data(), dy.data(), dx.data(), rows, cols);
            STRATA_COMPARE_OK(compare(dx, dwant, 1e-5, 1e-4, "activation_backward " + what));
          }
  }

  void softmax_large_logits_stable() {
    CpuBackend be(1);
    std::vector<float> x{1000.0f, 1001.0f, -1000.0f}, y(3);
    be.activation_forward(Activation::Softmax, x.data(), y.data(), 1, 3);
    for (float v : y) QVERIFY(std::isfinite(v));
    QCOMPARE(y[2], 0.0f);
    QVERIFY(std::fabs(y[0] + y[1] - 1.0f) < 1e-6f);
  }

  void sparse_softmax_xent() {
    for (int threads : {1, 2})
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 2}, {9, 5}, {5000, 10}, {3, 20000}}) {
        CpuBackend be(threads);
        auto logits = random_vector(static_cast<size_t>(rows * cols), -5.0f, 5.0f);
        std::vector<int32_t> labels(static_cast<size_t>(rows));
        for (auto& l : labels) l = static_cast<int32_t>(testutil::rng()() % static_cast<uint64_t>(cols));
        std::vector<double> lwant(static_cast<size_t>(rows)), dwant(logits.size());
        for (int64_t r = 0; r < rows; ++r) {
          auto p = ref_softmax_row(logits.data() + r * cols, cols);
          lwant[static_cast<size_t>(r)] = -std::log(p[static_cast<size_t>(labels[static_cast<size_t>(r)])]);
          for (int64_t c = 0; c < cols; ++c)
            dwant[static_cast<size_t>(r * cols + c)] = p[static_cast<size_t>(c)] - (c == labels[static_cast<size_t>(r)] ? 1.0 : 0.0);
        }
        auto loss = nan_vector(static_cast<size_t>(rows));
        auto d = nan_vector(logits.size());
        be.sparse_softmax_xent(logits.data(), labels.data(), rows, cols, loss.data(), d.data());
        STRATA_COMPARE_OK(compare(loss, lwant, 1e-5, 1e-5, "sparse_softmax_xent loss"));
        STRATA_COMPARE_OK(compare(d, dwant, 1e-6, 1e-5, "sparse_softmax_xent dlogits"));
        // dlogits is optional.
        auto loss2 = nan_vector(static_cast<size_t>(rows));
        be.sparse_softmax_xent(logits.data(), labels.data(), rows, cols, loss2.data(), nullptr);
        STRATA_COMPARE_OK(compare(loss2, lwant, 1e-5, 1e-5, "sparse_softmax_xent loss without dlogits"));
      }
  }

  void sparse_softmax_xent_bad_label() {
    // A kernel cannot throw on a device: bad labels raise the error flag,
    // their rows get no loss and no gradient, and nothing outside the row is read.
    CpuBackend be(1);
    std::vector<float> logits(6, 0.0f), loss(2, -1.0f), dlogits(6, -1.0f);
    std::vector<int32_t> labels{1, 3};
    float flag[2] = {0.0f, 0.0f};
    be.check_labels(labels.data(), 2, 3, flag);
    QCOMPARE(flag[0], 1.0f);
    QCOMPARE(flag[1], 3.0f);
    be.sparse_softmax_xent(logits.data(), labels.data(), 2, 3, loss.data(), dlogits.data());
    QCOMPARE(loss[1], 0.0f);
    for (int c = 3; c < 6; ++c) QCOMPARE(dlogits[static_cast<size_t>(c)], 0.0f);
    labels = {-1, -2};
    be.check_labels(labels.data(), 2, 3, flag);
    QCOMPARE(flag[0], 3.0f);
    QCOMPARE(flag[1], 3.0f);  // the first bad label seen is kept
    // Through the loss on the host, the error is raised at once.
    nn::SparseCategoricalCrossentropy xent(true, nn::Reduction::None);
    STRATA_EXPECT_ERROR(xent(Tensor::from_ints(Shape{2}, std::vector<int32_t>{0, 3}), Tensor::zeros(Shape{2, 3})),
                        ErrorKind::BadInput, "label 3");
  }

  void softmax_xent() {
    for (int threads : {1, 2})
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 2}, {9, 5}, {5000, 10}})
        for (bool soft : {false, true}) {
          CpuBackend be(threads);
          auto logits = random_vector(static_cast<size_t>(rows * cols), -5.0f, 5.0f);
          // One-hot or arbitrary non-negative soft targets (not summing to 1).
          std::vector<float> t = soft ? random_vector(logits.size(), 0.0f, 1.0f) : std::vector<float>(logits.size(), 0.0f);
          if (!soft)
            for (int64_t r = 0; r < rows; ++r) t[static_cast<size_t>(r * cols + static_cast<int64_t>(testutil::rng()() % static_cast<uint64_t>(cols)))] = 1.0f;
          std::vector<double> lwant(static_cast<size_t>(rows)), dwant(logits.size());
          for (int64_t r = 0; r < rows; ++r) {
            auto p = ref_softmax_row(logits.data() + r * cols, cols);
            double l = 0, tsum = 0;
            for (int64_t c = 0; c < cols; ++c) {
              const double tv = t[static_cast<size_t>(r * cols + c)];
              l -= tv * std::log(p[static_cast<size_t>(c)]);
              tsum += tv;
            }
            lwant[static_cast<size_t>(r)] = l;
            // d/dz_c of -sum_k t_k log softmax_k = tsum * p_c - t_c.
            for (int64_t c = 0; c < cols; ++c)
              dwant[static_cast<size_t>(r * cols + c)] = tsum * p[static_cast<size_t>(c)] - t[static_cast<size_t>(r * cols + c)];
          }
          auto loss = nan_vector(static_cast<size_t>(rows));
          auto d = nan_vector(logits.size());
          be.softmax_xent(logits.data(), t.data(), rows, cols, loss.data(), d.data());
          STRATA_COMPARE_OK(compare(loss, lwant, 1e-5, 1e-5, "softmax_xent loss"));
          STRATA_COMPARE_OK(compare(d, dwant, 1e-5, 1e-5, "softmax_xent dlogits"));
        }
  }

  void axpby() {
    for (int threads : {1, 2})
      for (int64_t n : kSizes)
        for (float beta : {0.0f, 1.0f, -0.25f}) {
          CpuBackend be(threads);
          auto x = random_vector(static_cast<size_t>(n));
          auto y = beta == 0.0f ? nan_vector(static_cast<size_t>(n)) : random_vector(static_cast<size_t>(n));
          std::vector<double> want(static_cast<size_t>(n));
          for (size_t i = 0; i < want.size(); ++i) want[i] = 1.75 * x[i] + (beta == 0.0f ? 0.0 : beta * double(y[i]));
          be.axpby(n, 1.75f, x.data(), beta, y.data());
          STRATA_COMPARE_OK(compare(y, want, 1e-6, 1e-6, "axpby beta=" + std::to_string(beta)));
        }
  }

  void dropout() {
    for (int threads : {1, 2})
      for (int64_t n : kSizes)
        for (float rate : {0.0f, 0.3f, 0.75f}) {
          CpuBackend be(threads);
          auto x = random_vector(static_cast<size_t>(n));
          auto y = nan_vector(static_cast<size_t>(n));
          auto mask = nan_vector(static_cast<size_t>(n));
          const uint64_t seed = 12345, stream = 3, counter = 77;
          const int32_t call = 5;
          const uint64_t key = hash_combine(seed, (uint64_t{5} << 16) ^ stream);
          be.dropout(n, rate, seed, stream, &call, counter, x.data(), y.data(), mask.data());
          const float scale = 1.0f / (1.0f - rate);
          std::vector<double> ywant(static_cast<size_t>(n)), mwant(static_cast<size_t>(n));
          int64_t kept = 0;
          for (int64_t i = 0; i < n; ++i) {
            const bool keep = uniform01(key, counter + static_cast<uint64_t>(i)) >= rate;
            kept += keep;
            mwant[static_cast<size_t>(i)] = keep ? scale : 0.0f;
            ywant[static_cast<size_t>(i)] = keep ? double(x[static_cast<size_t>(i)]) * scale : 0.0;
          }
          STRATA_COMPARE_OK(compare(mask, mwant, 0, 1e-7, "dropout mask"));
          STRATA_COMPARE_OK(compare(y, ywant, 1e-7, 1e-6, "dropout y"));
          if (n == kBig) {
            const double frac = double(kept) / double(n);
            QVERIFY2(std::fabs(frac - (1.0 - rate)) < 0.01, qPrintable(QString("kept fraction %1 for rate %2").arg(frac).arg(rate)));
          }
        }
  }

  void dropout_call_numbers_stay_exact() {
    // Past 2^24 a float counter stops (x + 1 == x) and every later step would
    // draw the same mask; the int32 counter goes on, and past 2^31 it is read
    // as unsigned.
    CpuBackend be(1);
    for (uint32_t start : {uint32_t{1} << 24, 0x7fffffffu, 0xffffffffu}) {
      int32_t call = static_cast<int32_t>(start);
      be.increment(1, &call);
      QCOMPARE(static_cast<uint32_t>(call), start + 1u);
    }
    const int64_t n = 4096;
    auto x = random_vector(static_cast<size_t>(n));
    std::vector<float> y(static_cast<size_t>(n)), m1(static_cast<size_t>(n)), m2(static_cast<size_t>(n));
    int32_t call = int32_t{1} << 24;
    be.dropout(n, 0.5f, 7, 0, &call, 0, x.data(), y.data(), m1.data());
    be.increment(1, &call);
    be.dropout(n, 0.5f, 7, 0, &call, 0, x.data(), y.data(), m2.data());
    QVERIFY2(m1 != m2, "two calls past 2^24 drew the same mask");
    // The key takes the call as unsigned: 2^31 + 5 is not -2^31 + 5 widened.
    call = static_cast<int32_t>(0x80000005u);
    be.dropout(n, 0.5f, 7, 0, &call, 0, x.data(), y.data(), m1.data());
    const uint64_t key = hash_combine(7, uint64_t{0x80000005u} << 16);
    for (int64_t i = 0; i < n; ++i)
      QCOMPARE(m1[static_cast<size_t>(i)], uniform01(key, static_cast<uint64_t>(i)) >= 0.5f ? 2.0f : 0.0f);
  }

  void dropout_counter_offset() {
    // A mask drawn in two pieces with counters 0 and k equals one drawn whole.
    CpuBackend be(2);
    const int64_t n = 70001, k = 33333;
    auto x = random_vector(static_cast<size_t>(n));
    std::vector<float> y(static_cast<size_t>(n)), m(static_cast<size_t>(n)), y2(static_cast<size_t>(n)), m2(static_cast<size_t>(n));
    const int32_t call = 0;
    be.dropout(n, 0.4f, 99, 0, &call, 0, x.data(), y.data(), m.data());
    be.dropout(k, 0.4f, 99, 0, &call, 0, x.data(), y2.data(), m2.data());
    be.dropout(n - k, 0.4f, 99, 0, &call, static_cast<uint64_t>(k), x.data() + k, y2.data() + k, m2.data() + k);
    STRATA_COMPARE_OK(testutil::identical(m2, m, "dropout mask in pieces"));
    STRATA_COMPARE_OK(testutil::identical(y2, y, "dropout y in pieces"));
  }

  void mul_scale_rows() {
    for (int threads : {1, 2}) {
      CpuBackend be(threads);
      for (int64_t n : kSizes) {
        auto a = random_vector(static_cast<size_t>(n)), b = random_vector(static_cast<size_t>(n));
        auto y = nan_vector(static_cast<size_t>(n));
        std::vector<double> want(static_cast<size_t>(n));
        for (size_t i = 0; i < want.size(); ++i) want[i] = double(a[i]) * b[i];
        be.mul(n, a.data(), b.data(), y.data());
        STRATA_COMPARE_OK(compare(y, want, 1e-7, 1e-6, "mul"));
      }
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {7, 3}, {5000, 13}}) {
        auto x = random_vector(static_cast<size_t>(rows * cols));
        auto s = random_vector(static_cast<size_t>(rows), -3.0f, 3.0f);
        auto y = nan_vector(x.size());
        std::vector<double> want(x.size());
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            want[static_cast<size_t>(r * cols + c)] = double(s[static_cast<size_t>(r)]) * x[static_cast<size_t>(r * cols + c)];
        be.scale_rows(x.data(), s.data(), rows, cols, y.data());
        STRATA_COMPARE_OK(compare(y, want, 1e-6, 1e-6, "scale_rows"));
      }
    }
  }

  void log_clamp() {
    const float eps = 1e-3f;
    for (int threads : {1, 2})
      for (int64_t n : kSizes) {
        CpuBackend be(threads);
        // Include values outside [eps, 1 - eps] on both sides.
        auto x = random_vector(static_cast<size_t>(n), -0.1f, 1.1f);
        if (n >= 4) {
          x[0] = 0.0f;
          x[1] = 1.0f;
          x[2] = eps;
          x[3] = 1.0f - eps;
        }
        auto y = nan_vector(x.size());
        std::vector<double> want(x.size());
        for (size_t i = 0; i < x.size(); ++i) want[i] = std::log(std::clamp(double(x[i]), double(eps), double(1.0f - eps)));
        be.log_clamp(n, x.data(), eps, y.data());
        STRATA_COMPARE_OK(compare(y, want, 1e-6, 1e-5, "log_clamp"));

        auto dy = random_vector(x.size());
        auto dx = nan_vector(x.size());
        std::vector<double> dwant(x.size());
        for (size_t i = 0; i < x.size(); ++i)
          dwant[i] = (x[i] >= eps && x[i] <= 1.0f - eps) ? double(dy[i]) / x[i] : 0.0;
        be.log_clamp_backward(n, x.data(), eps, dy.data(), dx.data());
        STRATA_COMPARE_OK(compare(dx, dwant, 1e-6, 1e-5, "log_clamp_backward"));
      }
  }

  void scaled_sum() {
    for (int threads : {1, 2}) {
      CpuBackend be(threads);
      const float scale = 0.25f;
      for (int64_t n : kSizes) {
        auto x = random_vector(static_cast<size_t>(n));
        double want = 0;
        for (float v : x) want += v;
        want *= scale;
        float got = -1.0f;
        be.scaled_sum(n, x.data(), &scale, &got);
        QVERIFY2(std::fabs(got - want) <= 1e-6 * (std::fabs(want) + 1.0),
                 qPrintable(QString("scaled_sum n=%1: %2 vs %3").arg(n).arg(got, 0, 'g', 9).arg(want, 0, 'g', 17)));
        std::vector<float> back(static_cast<size_t>(n), -1.0f);
        be.broadcast_scaled(n, &got, &scale, back.data());
        for (float v : back) QCOMPARE(v, got * scale);
      }
      float empty = -1.0f;
      be.scaled_sum(0, nullptr, &scale, &empty);
      QCOMPARE(empty, 0.0f);
    }
  }

  // ---- fused optimizer kernels vs Keras' formulas --------------------------------

  void sgd_update_kernel() {
    for (int threads : {1, 2})
      for (int64_t n : {int64_t{5}, kBig})
        for (float momentum : {0.0f, 0.9f})
          for (bool nesterov : {false, true}) {
            CpuBackend be(threads);
            const float lr = 0.05f;
            auto w = random_vector(static_cast<size_t>(n));
            std::vector<float> v(static_cast<size_t>(n), 0.0f);
            std::vector<double> wd(w.begin(), w.end()), vd(static_cast<size_t>(n), 0.0);
            Streamed streamed(w, 1);
            for (int step = 0; step < 4; ++step) {
              auto g = random_vector(static_cast<size_t>(n));
              for (size_t i = 0; i < wd.size(); ++i) {
                if (momentum == 0.0f) {
                  wd[i] -= double(lr) * g[i];
                } else {
                  vd[i] = double(momentum) * vd[i] - double(lr) * g[i];
                  wd[i] += nesterov ? double(momentum) * vd[i] - double(lr) * g[i] : vd[i];
                }
              }
              be.sgd_update(n, w.data(), g.data(), momentum == 0.0f ? nullptr : v.data(), &lr, momentum, nesterov,
                            WeightStores::Cached);
              be.sgd_update(n, streamed.w(), g.data(), momentum == 0.0f ? nullptr : streamed.state(0), &lr, momentum,
                            nesterov, WeightStores::Streamed);
            }
            QVERIFY(streamed.weights() == w);
            STRATA_COMPARE_OK(compare(w, wd, 1e-6, 1e-5, "sgd_update w"));
            if (momentum != 0.0f) STRATA_COMPARE_OK(compare(v, vd, 1e-6, 1e-5, "sgd_update velocity"));
          }
  }

  void adam_update_kernel() {
    for (int threads : {1, 2})
      for (int64_t n : {int64_t{5}, kBig}) {
        CpuBackend be(threads);
        const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-7;
        auto w = random_vector(static_cast<size_t>(n));
        std::vector<float> m(static_cast<size_t>(n), 0.0f), v(static_cast<size_t>(n), 0.0f);
        std::vector<double> wd(w.begin(), w.end()), md(static_cast<size_t>(n), 0.0), vd(static_cast<size_t>(n), 0.0);
        Streamed streamed(w, 2);
        for (int64_t t = 1; t <= 5; ++t) {
          auto g = random_vector(static_cast<size_t>(n));
          // Keras Adam: lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t); w -= lr_t * m / (sqrt(v) + eps).
          const double lr_t = lr * std::sqrt(1 - std::pow(b2, double(t))) / (1 - std::pow(b1, double(t)));
          for (size_t i = 0; i < wd.size(); ++i) {
            md[i] = b1 * md[i] + (1 - b1) * g[i];
            vd[i] = b2 * vd[i] + (1 - b2) * double(g[i]) * g[i];
            wd[i] -= lr_t * md[i] / (std::sqrt(vd[i]) + eps);
          }
          const float lr_step[2] = {float(lr), float(t)};
          const AdamParams p{float(b1), float(b2), float(eps)};
          be.adam_update(n, w.data(), g.data(), m.data(), v.data(), p, lr_step, WeightStores::Cached);
          be.adam_update(n, streamed.w(), g.data(), streamed.state(0), streamed.state(1), p, lr_step, WeightStores::Streamed);
        }
        QVERIFY(streamed.weights() == w);
        STRATA_COMPARE_OK(compare(m, md, 1e-6, 1e-5, "adam m"));
        STRATA_COMPARE_OK(compare(v, vd, 1e-7, 1e-4, "adam v"));
        STRATA_COMPARE_OK(compare(w, wd, 1e-5, 1e-5, "adam w"));
      }
  }

  // ---- optimizers through the nn API ------------------------------------------

  void sgd_optimizer_matches_keras() {
    struct Case {
      float momentum;
      bool nesterov;
    };
    for (Case c : {Case{0.0f, false}, Case{0.9f, false}, Case{0.9f, true}, Case{0.5f, true}}) {
      const float lr = 0.1f;
      nn::SGD opt(lr, c.momentum, c.nesterov);
      auto init = random_vector(37);
      Variable var("w", Tensor::from(Shape{37}, init));
      std::vector<double> w(init.begin(), init.end()), vel(37, 0.0);
      for (int step = 0; step < 5; ++step) {
        auto g = random_vector(37);
        opt.apply_gradients({Tensor::from(Shape{37}, g)}, {&var});
        for (size_t i = 0; i < w.size(); ++i) {
          vel[i] = double(c.momentum) * vel[i] - double(lr) * g[i];
          if (c.momentum == 0.0f) w[i] -= double(lr) * g[i];
          else if (c.nesterov) w[i] += double(c.momentum) * vel[i] - double(lr) * g[i];
          else w[i] += vel[i];
        }
      }
      QCOMPARE(opt.iterations(), int64_t{5});
      STRATA_COMPARE_OK(compare(var.value().span(), w, 1e-6, 1e-5,
                                "SGD momentum=" + std::to_string(c.momentum) + " nesterov=" + std::to_string(c.nesterov)));
    }
  }

  void adam_optimizer_keras_defaults() {
    nn::Adam opt;
    QCOMPARE(opt.learning_rate(), 0.001f);
    auto cfg = opt.config();
    QCOMPARE(cfg["beta_1"].get<float>(), 0.9f);
    QCOMPARE(cfg["beta_2"].get<float>(), 0.999f);
    QCOMPARE(cfg["epsilon"].get<float>(), 1e-7f);

    auto init = random_vector(29);
    Variable var("w", Tensor::from(Shape{29}, init));
    std::vector<double> w(init.begin(), init.end()), m(29, 0.0), v(29, 0.0);
    for (int t = 1; t <= 6; ++t) {
      auto g = random_vector(29);
      opt.apply_gradients({Tensor::from(Shape{29}, g)}, {&var});
      const double lr_t = 0.001 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
      for (size_t i = 0; i < w.size(); ++i) {
        m[i] = 0.9 * m[i] + 0.1 * g[i];
        v[i] = 0.999 * v[i] + 0.001 * double(g[i]) * g[i];
        w[i] -= lr_t * m[i] / (std::sqrt(v[i]) + 1e-7);
      }
    }
    STRATA_COMPARE_OK(compare(var.value().span(), w, 1e-6, 1e-5, "Adam defaults"));
  }

  void optimizer_bad_hyperparameters() {
    STRATA_EXPECT_ERROR(nn::SGD(0.0f), ErrorKind::BadInput, "learning rate");
    STRATA_EXPECT_ERROR(nn::SGD(0.1f, 1.0f), ErrorKind::BadInput, "momentum");
    STRATA_EXPECT_ERROR(nn::Adam(0.1f, 1.0f), ErrorKind::BadInput, "beta_1");
    STRATA_EXPECT_ERROR(nn::Adam(-1.0f), ErrorKind::BadInput, "learning rate");
  }

  // ---- accuracy metric -----------------------------------------------------------

  void accuracy_metric() {
    // Arg-max per row against integer (or float) labels; ties go to the first class, as argmax.
    Tensor pred = Tensor::from(Shape{4, 3}, std::vector<float>{0.1f, 0.7f, 0.2f,  //
                                                                 0.5f, 0.5f, 0.0f,  //
                                                                 -1.0f, -2.0f, -0.5f,  //
                                                                 0.3f, 0.3f, 0.4f});
    Tensor labels = Tensor::from_ints(Shape{4}, std::vector<int32_t>{1, 0, 0, 2});
    QCOMPARE(nn::count_correct(pred, labels), int64_t{3});
    Tensor float_labels = Tensor::from(Shape{4}, std::vector<float>{1, 1, 2, 2});
    QCOMPARE(nn::count_correct(pred, float_labels), int64_t{3});
    nn::SparseCategoricalAccuracy acc;
    QCOMPARE(acc.result(), 0.0);
    acc.update(labels, pred);
    acc.update(float_labels, pred);
    QCOMPARE(acc.correct(), int64_t{6});
    QCOMPARE(acc.total(), int64_t{8});
    QCOMPARE(acc.result(), 0.75);
    acc.reset();
    QCOMPARE(acc.total(), int64_t{0});
    STRATA_EXPECT_ERROR(nn::count_correct(pred, Tensor::from_ints(Shape{3}, std::vector<int32_t>{0, 1, 2})), ErrorKind::BadInput,
                        "accuracy");
  }

  // ---- determinism -------------------------------------------------------------

  void training_is_deterministic() {
    for (int threads : {1, 2}) {
      auto a = train_weights(threads, 1234);
      auto b = train_weights(threads, 1234);
      STRATA_COMPARE_OK(testutil::identical(a, b, "weights, threads=" + std::to_string(threads)));
      auto c = train_weights(threads, 1235);
      QVERIFY2(testutil::identical(a, c).size() > 0, "a different seed should give different weights");
    }
  }

private:
  // A few Adam steps of a small MLP with dropout on fixed data; returns every
  // weight, concatenated.
  static std::vector<float> train_weights(int threads, uint64_t seed) {
    CpuBackend be(threads);
    ScopedCpuBackend use(&be);
    set_global_seed(seed);
    nn::Sequential model{nn::Dense(300, Activation::Relu), nn::Dropout(0.25f), nn::Dense(64, Activation::Tanh), nn::Dense(5)};
    nn::Adam opt(0.01f);
    nn::SparseCategoricalCrossentropy loss_fn(true);
    Rng data_rng(seed ^ 0xABCDEF);
    const int64_t batch = 96, features = 40;
    std::vector<float> x(static_cast<size_t>(batch * features));
    std::vector<int32_t> y(static_cast<size_t>(batch));
    for (auto& v : x) v = data_rng.normal();
    for (auto& l : y) l = static_cast<int32_t>(data_rng.below(5));
    Tensor xt = Tensor::from(Shape{batch, features}, x), yt = Tensor::from_ints(Shape{batch}, y);
    model.build(Shape{features});
    auto vars = model.trainable_variables();
    for (int step = 0; step < 4; ++step) {
      GradientTape tape;
      Tensor logits = model(xt, true, tape);
      Tensor loss = loss_fn(yt, logits);
      opt.apply_gradients(tape.gradient(loss, vars), vars);
    }
    std::vector<float> out;
    for (auto* v : vars) out.insert(out.end(), v->value().span().begin(), v->value().span().end());
    return out;
  }
};

QTEST_APPLESS_MAIN(TestKernels)
#include "test_kernels.moc"
