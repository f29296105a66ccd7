// Forward passes of the image layers against naive direct loops in double:
// Conv2D (no patch matrix in the reference) over "same" and "valid" padding,
// strides 1 and 2 (also unequal), odd sizes, several channel counts, with and
// without bias and with each activation; MaxPool2D, AveragePool2D and
// GlobalAveragePooling2D over the same kinds of windows. Inputs are fresh
// random values each run (the seed is printed). On the CPU the layers run
// with 1 and 2 threads; registered a second time as test_image_reference_sim,
// they run on the simulated accelerator, where Conv2D convolves in one
// backend call instead of building the patch matrix in the layer.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/CpuBackend.h"
#include "engine/TestUtil.h"
#include "nn/Conv2D.h"
#include "nn/Pool2D.h"

using namespace strata;
using testutil::compare;
using testutil::identical;
using testutil::random_vector;

namespace {

// Where the layers run: the CPU, or sim:0 under STRATA_TEST_DEVICES=sim.
Device test_device() {
  const char* env = std::getenv("STRATA_TEST_DEVICES");
  return env && std::string(env) == "sim" ? Device{DeviceKind::Sim, 0} : Device{};
}

// Runs fn once per configuration of the device: the CPU with 1 and 2
// threads (the layer's kernels split their work), or the sim device once.
template <typename Fn>
void on_each_configuration(Fn fn) {
  const Device device = test_device();
  if (!device.is_host()) {
    fn(device, std::string(" on ") + device.str());
    return;
  }
  for (int threads : {1, 2}) {
    CpuBackend be(threads);
    ScopedCpuBackend use(&be);
    fn(device, " on cpu, " + std::to_string(threads) + " thread(s)");
  }
}

// TF's output size and padding before, per dimension.
struct Dim {
  int64_t out, pad;
};
Dim tf_dim(int64_t in, int64_t k, int64_t s, bool same) {
  if (same) {
    const int64_t out = (in + s - 1) / s;
    return {out, std::max<int64_t>((out - 1) * s + k - in, 0) / 2};
  }
  return {(in - k) / s + 1, 0};
}

double activate(Activation act, double v) {
  switch (act) {
    case Activation::Relu: return v > 0 ? v : 0.0;
    case Activation::Tanh: return std::tanh(v);
    case Activation::Sigmoid: return 1.0 / (1.0 + std::exp(-v));
    default: return v;
  }
}

struct ConvCase {
  int64_t batch, height, width, in_channels, filters, kh, kw, sh, sw;
  bool same;
  Activation act;
  bool bias;
};

// y[n, oy, ox, f] = act(b[f] + sum over ky, kx, c of x[n, oy*sh - pad + ky, ox*sw - pad + kx, c] * k[ky, kx, c, f]),
// pixels outside the image skipped (zero padding).
std::vector<double> naive_conv(const ConvCase& c, const std::vector<float>& x, const std::vector<float>& k,
                               const std::vector<float>& b, Dim dy, Dim dx) {
  std::vector<double> y(static_cast<size_t>(c.batch * dy.out * dx.out * c.filters));
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t oy = 0; oy < dy.out; ++oy)
      for (int64_t ox = 0; ox < dx.out; ++ox)
        for (int64_t f = 0; f < c.filters; ++f) {
          double s = c.bias ? b[static_cast<size_t>(f)] : 0.0;
          for (int64_t ky = 0; ky < c.kh; ++ky)
            for (int64_t kx = 0; kx < c.kw; ++kx) {
              const int64_t iy = oy * c.sh - dy.pad + ky, ix = ox * c.sw - dx.pad + kx;
              if (iy < 0 || iy >= c.height || ix < 0 || ix >= c.width) continue;
              for (int64_t ch = 0; ch < c.in_channels; ++ch)
                s += static_cast<double>(x[static_cast<size_t>(((n * c.height + iy) * c.width + ix) * c.in_channels + ch)]) *
                     k[static_cast<size_t>(((ky * c.kw + kx) * c.in_channels + ch) * c.filters + f)];
            }
          y[static_cast<size_t>(((n * dy.out + oy) * dx.out + ox) * c.filters + f)] = activate(c.act, s);
        }
  return y;
}

struct PoolCase {
  nn::Pool2DLayer::Kind kind;
  int64_t batch, height, width, channels, ph, pw, sh, sw;
  bool same;
};

// Max or mean over the window's pixels inside the image (TF pads max pooling
// with -inf and leaves padding out of the average's count).
std::vector<double> naive_pool(const PoolCase& c, const std::vector<float>& x, Dim dy, Dim dx) {
  std::vector<double> y(static_cast<size_t>(c.batch * dy.out * dx.out * c.channels));
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t oy = 0; oy < dy.out; ++oy)
      for (int64_t ox = 0; ox < dx.out; ++ox)
        for (int64_t ch = 0; ch < c.channels; ++ch) {
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          int count = 0;
          for (int64_t ky = 0; ky < c.ph; ++ky)
            for (int64_t kx = 0; kx < c.pw; ++kx) {
              const int64_t iy = oy * c.sh - dy.pad + ky, ix = ox * c.sw - dx.pad + kx;
              if (iy < 0 || iy >= c.height || ix < 0 || ix >= c.width) continue;
              const double xv = x[static_cast<size_t>(((n * c.height + iy) * c.width + ix) * c.channels + ch)];
              best = std::max(best, xv);
              sum += xv;
              ++count;
            }
          const double v = c.kind == nn::Pool2DLayer::Kind::Max ? best : sum / count;
          y[static_cast<size_t>(((n * dy.out + oy) * dx.out + ox) * c.channels + ch)] = v;
        }
  return y;
}

}  // namespace

Q_DECLARE_METATYPE(ConvCase)
Q_DECLARE_METATYPE(PoolCase)

class TestImageReference : public QObject {
  Q_OBJECT

private slots:
  void initTestCase() {
    qInfo("random seed %llu (set STRATA_TEST_SEED to replay); layers on %s",
          static_cast<unsigned long long>(testutil::process_seed()), test_device().str().c_str());
  }

  void conv2d_forward_data() {
    QTest::addColumn<ConvCase>("c");
    // batch, height, width, in, filters, kh, kw, sh, sw, same, activation, bias
    QTest::newRow("3x3 valid s1, 1 -> 4 channels") << ConvCase{3, 9, 7, 1, 4, 3, 3, 1, 1, false, Activation::None, true};
    QTest::newRow("3x3 same s1, 3 -> 5, relu") << ConvCase{2, 8, 8, 3, 5, 3, 3, 1, 1, true, Activation::Relu, true};
    QTest::newRow("3x3 same s2, odd size 9x11") << ConvCase{3, 9, 11, 2, 6, 3, 3, 2, 2, true, Activation::None, true};
    QTest::newRow("3x3 same s2, even size (padding only after), tanh")
        << ConvCase{2, 8, 10, 4, 3, 3, 3, 2, 2, true, Activation::Tanh, true};
    QTest::newRow("5x5 same s1 (the tutorial CNN's), 1 -> 8")
        << ConvCase{2, 12, 12, 1, 8, 5, 5, 1, 1, true, Activation::None, true};
    QTest::newRow("5x5 valid s2, odd size, no bias") << ConvCase{3, 13, 11, 3, 4, 5, 5, 2, 2, false, Activation::None, false};
    QTest::newRow("2x2 valid s2, odd size, sigmoid") << ConvCase{4, 7, 9, 5, 2, 2, 2, 2, 2, false, Activation::Sigmoid, true};
    QTest::newRow("3x2 kernel, strides 2x1, same") << ConvCase{2, 9, 8, 3, 4, 3, 2, 2, 1, true, Activation::None, true};
    QTest::newRow("1x1 s1 (no patch matrix)") << ConvCase{3, 5, 7, 6, 4, 1, 1, 1, 1, false, Activation::None, true};
    QTest::newRow("1x1 s2 same") << ConvCase{2, 7, 7, 3, 5, 1, 1, 2, 2, true, Activation::None, true};
    QTest::newRow("kernel as large as the image, valid")
        << ConvCase{2, 5, 5, 2, 3, 5, 5, 1, 1, false, Activation::None, true};
    QTest::newRow("8 -> 16 channels, 3x3 same s1, relu")
        << ConvCase{2, 10, 9, 8, 16, 3, 3, 1, 1, true, Activation::Relu, true};
  }
  void conv2d_forward() {
    QFETCH(ConvCase, c);
    const Dim dy = tf_dim(c.height, c.kh, c.sh, c.same), dx = tf_dim(c.width, c.kw, c.sw, c.same);
    const auto x = random_vector(static_cast<size_t>(c.batch * c.height * c.width * c.in_channels));
    const auto k = random_vector(static_cast<size_t>(c.kh * c.kw * c.in_channels * c.filters), -0.5f, 0.5f);
    const auto b = random_vector(static_cast<size_t>(c.filters));
    const auto want = naive_conv(c, x, k, b, dy, dx);
    // float32 products summed over the patch: rounding grows with its size.
    const double atol = 1e-6 * static_cast<double>(c.kh * c.kw * c.in_channels) + 1e-6;
    on_each_configuration([&](const Device& device, const std::string& where) {
      VariableComponentsScope scope({device});
      nn::Conv2DLayer conv(c.filters, c.kh, c.kw, c.sh, c.sw, c.same ? nn::Padding::Same : nn::Padding::Valid, c.act, c.bias);
      conv.build(Shape{c.height, c.width, c.in_channels});
      const auto vars = conv.trainable_variables();
      QCOMPARE(vars.size(), size_t{c.bias ? 2u : 1u});
      QCOMPARE(vars[0]->shape(), (Shape{c.kh, c.kw, c.in_channels, c.filters}));
      vars[0]->assign(Tensor::from(vars[0]->shape(), k));
      if (c.bias) vars[1]->assign(Tensor::from(Shape{c.filters}, b));
      const Tensor y = conv.call(Tensor::from(Shape{c.batch, c.height, c.width, c.in_channels}, x, device), false);
      QCOMPARE(y.shape(), (Shape{c.batch, dy.out, dx.out, c.filters}));
      QCOMPARE(conv.output_shape(Shape{c.height, c.width, c.in_channels}), (Shape{dy.out, dx.out, c.filters}));
      QVERIFY(y.device() == device);
      STRATA_COMPARE_OK(compare(y.values(), want, atol, 1e-5, "conv2d" + where));
    });
  }

  void pool_forward_data() {
    using Kind = nn::Pool2DLayer::Kind;
    QTest::addColumn<PoolCase>("c");
    for (Kind kind : {Kind::Max, Kind::Average}) {
      const std::string k = kind == Kind::Max ? "max " : "average ";
      // kind, batch, height, width, channels, pool h, pool w, stride h, stride w, same
      QTest::newRow((k + "2x2 s2 valid, even size").c_str()) << PoolCase{kind, 3, 8, 8, 4, 2, 2, 2, 2, false};
      QTest::newRow((k + "2x2 s2 valid, odd size (last row and column dropped)").c_str())
          << PoolCase{kind, 2, 7, 9, 3, 2, 2, 2, 2, false};
      QTest::newRow((k + "2x2 s2 same, odd size (windows over the edge)").c_str())
          << PoolCase{kind, 2, 7, 9, 3, 2, 2, 2, 2, true};
      QTest::newRow((k + "3x3 s1 same (overlapping windows)").c_str()) << PoolCase{kind, 3, 6, 5, 2, 3, 3, 1, 1, true};
      QTest::newRow((k + "3x3 s2 same, even size").c_str()) << PoolCase{kind, 2, 8, 10, 3, 3, 3, 2, 2, true};
      QTest::newRow((k + "3x3 s2 valid, odd size").c_str()) << PoolCase{kind, 2, 11, 9, 1, 3, 3, 2, 2, false};
      QTest::newRow((k + "2x3 pool, strides 1x2, same").c_str()) << PoolCase{kind, 2, 7, 8, 5, 2, 3, 1, 2, true};
      QTest::newRow((k + "28x28, 16 channels (the tutorial CNN's)").c_str())
          << PoolCase{kind, 2, 28, 28, 16, 2, 2, 2, 2, false};
    }
  }
  void pool_forward() {
    QFETCH(PoolCase, c);
    const Dim dy = tf_dim(c.height, c.ph, c.sh, c.same), dx = tf_dim(c.width, c.pw, c.sw, c.same);
    const auto x = random_vector(static_cast<size_t>(c.batch * c.height * c.width * c.channels), -2.0f, 2.0f);
    const auto want = naive_pool(c, x, dy, dx);
    on_each_configuration([&](const Device& device, const std::string& where) {
      nn::Pool2DLayer pool(c.kind, c.ph, c.pw, c.sh, c.sw, c.same ? nn::Padding::Same : nn::Padding::Valid);
      const Tensor y = pool.call(Tensor::from(Shape{c.batch, c.height, c.width, c.channels}, x, device), false);
      QCOMPARE(y.shape(), (Shape{c.batch, dy.out, dx.out, c.channels}));
      QCOMPARE(pool.output_shape(Shape{c.height, c.width, c.channels}), (Shape{dy.out, dx.out, c.channels}));
      QVERIFY(y.device() == device);
      const std::vector<float> got = y.values();
      if (c.kind == nn::Pool2DLayer::Kind::Max) {
        // A maximum is one of the inputs: exact, never a padded value.
        STRATA_COMPARE_OK(identical(got, std::vector<float>(want.begin(), want.end()), "max pool" + where));
      } else {
        STRATA_COMPARE_OK(compare(got, want, 1e-6, 1e-6, "average pool" + where));
      }
    });
  }

  void pool_factories_default_to_strides_of_the_pool_size() {
    // Keras: MaxPool2D(2) is a 2x2 window moved by 2, "valid".
    const auto x = random_vector(size_t{2 * 9 * 7 * 3});
    const PoolCase max_case{nn::Pool2DLayer::Kind::Max, 2, 9, 7, 3, 3, 3, 3, 3, false};
    const PoolCase avg_case{nn::Pool2DLayer::Kind::Average, 2, 9, 7, 3, 2, 2, 2, 2, true};
    on_each_configuration([&](const Device& device, const std::string& where) {
      const Tensor xt = Tensor::from(Shape{2, 9, 7, 3}, x, device);
      const Tensor ym = nn::MaxPool2D(3)->call(xt, false);
      const Dim my = tf_dim(9, 3, 3, false), mx = tf_dim(7, 3, 3, false);
      QCOMPARE(ym.shape(), (Shape{2, my.out, mx.out, 3}));
      const auto want_max = naive_pool(max_case, x, my, mx);
      STRATA_COMPARE_OK(identical(ym.values(), std::vector<float>(want_max.begin(), want_max.end()), "MaxPool2D(3)" + where));
      const Tensor ya = nn::AveragePool2D(2, 0, nn::Padding::Same)->call(xt, false);
      const Dim ay = tf_dim(9, 2, 2, true), ax = tf_dim(7, 2, 2, true);
      QCOMPARE(ya.shape(), (Shape{2, ay.out, ax.out, 3}));
      STRATA_COMPARE_OK(compare(ya.values(), naive_pool(avg_case, x, ay, ax), 1e-6, 1e-6, "AveragePool2D(2, same)" + where));
    });
  }

  void global_average_pooling_forward() {
    const int64_t batch = 3, h = 7, w = 5, channels = 6;
    const auto x = random_vector(static_cast<size_t>(batch * h * w * channels));
    std::vector<double> want(static_cast<size_t>(batch * channels), 0.0);
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t p = 0; p < h * w; ++p)
        for (int64_t c = 0; c < channels; ++c)
          want[static_cast<size_t>(n * channels + c)] += x[static_cast<size_t>((n * h * w + p) * channels + c)] /
                                                         double(h * w);
    on_each_configuration([&](const Device& device, const std::string& where) {
      nn::Pool2DLayer pool(nn::Pool2DLayer::Kind::GlobalAverage, 0, 0, 1, 1, nn::Padding::Valid);
      const Tensor y = pool.call(Tensor::from(Shape{batch, h, w, channels}, x, device), false);
      QCOMPARE(y.shape(), (Shape{batch, channels}));
      STRATA_COMPARE_OK(compare(y.values(), want, 1e-6, 1e-6, "global average pooling" + where));
    });
  }
};

QTEST_GUILESS_MAIN(TestImageReference)
#include "test_image_reference.moc"
