// Finite-difference gradient checks for every layer and loss, through the
// GradientTape. The engine computes in float32, so the checks use central
// differences in float with the sum accumulated in double, a step of a few
// 1e-3 and tolerances to match. Each output is contracted with a random
// cotangent r (a custom recorded op), so e.g. softmax's gradient is not
// trivially zero.
#include <QtTest/QtTest>

#include <algorithm>
#include <set>

#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "TestUtil.h"
#include "backend/Backend.h"
#include "core/Rng.h"
#include "core/Tensor.h"
#include "nn/ActivationLayer.h"
#include "nn/Dense.h"
#include "nn/Dropout.h"
#include "nn/Flatten.h"
#include "nn/GradientTape.h"
#include "nn/Loss.h"
#include "nn/Sequential.h"

using namespace strata;
using testutil::compare;
using testutil::random_vector;

namespace {

constexpr double kStep = 4e-3;
constexpr double kAtol = 1.5e-3;
constexpr double kRtol = 1.5e-2;

Tensor random_tensor(const Shape& s, float lo = -1.0f, float hi = 1.0f) {
  auto v = random_vector(static_cast<size_t>(s.numel()), lo, hi);
  return Tensor::from(s, v);
}

double weighted_sum_value(const Tensor& y, const Tensor& r) {
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i) s += double(y.data()[i]) * r.data()[i];
  return s;
}

// sum(y * r) as a recorded op: d/dy = r * upstream.
Tensor weighted_sum(const Tensor& y, const Tensor& r) {
  Tensor out = Tensor::scalar(static_cast<float>(weighted_sum_value(y, r)));
  record_op({y}, out, [r](const Tensor& g, const std::vector<bool>&) {
    Tensor d = r.clone();
    for (auto& v : d.span()) v *= g.item();
    return std::vector<Tensor>{d};
  });
  return out;
}

// a + b for scalars, recorded.
Tensor add_scalars(const Tensor& a, const Tensor& b) {
  Tensor out = Tensor::scalar(a.item() + b.item());
  record_op({a, b}, out, [](const Tensor& g, const std::vector<bool>&) {
    return std::vector<Tensor>{Tensor::scalar(g.item()), Tensor::scalar(g.item())};
  });
  return out;
}

// Central differences of `objective` with respect to every element of
// `param` (modified in place and restored), compared to `analytic`.
std::string fd_check(const std::function<double()>& objective, Tensor param, const Tensor& analytic, const std::string& what,
                     double step = kStep, double atol = kAtol, double rtol = kRtol) {
  if (!analytic.defined()) return what + ": no analytic gradient";
  if (analytic.shape() != param.shape())
    return what + ": gradient shape " + analytic.shape().str() + " != parameter shape " + param.shape().str();
  std::vector<double> numeric(static_cast<size_t>(param.numel()));
  float* p = param.data();
  for (int64_t i = 0; i < param.numel(); ++i) {
    const float v = p[i];
    const float plus = static_cast<float>(v + step), minus = static_cast<float>(v - step);
    p[i] = plus;
    const double lp = objective();
    p[i] = minus;
    const double lm = objective();
    p[i] = v;
    numeric[static_cast<size_t>(i)] = (lp - lm) / (double(plus) - double(minus));
  }
  return compare(analytic.span(), numeric, atol, rtol, what);
}

std::string act_name(Activation a) { return nn::activation_name(a); }

}  // namespace

class TestGradients : public QObject {
  Q_OBJECT

private slots:
  void initTestCase() { qInfo("random seed %llu (set STRATA_TEST_SEED to replay)", static_cast<unsigned long long>(testutil::process_seed())); }

  void dense_each_activation_data() {
    QTest::addColumn<int>("act");
    QTest::addColumn<bool>("bias");
    for (auto a : {Activation::None, Activation::Relu, Activation::Tanh, Activation::Sigmoid, Activation::Softmax})
      QTest::newRow(act_name(a).c_str()) << int(a) << true;
    QTest::newRow("linear-no-bias") << int(Activation::None) << false;
    QTest::newRow("tanh-no-bias") << int(Activation::Tanh) << false;
  }
  void dense_each_activation() {
    QFETCH(int, act);
    QFETCH(bool, bias);
    const auto activation = static_cast<Activation>(act);
    const int64_t batch = 4, in = 5, units = 3;
    nn::DenseLayer layer(units, activation, bias);
    layer.build(Shape{in});
    QCOMPARE(layer.trainable_variables().size(), size_t(bias ? 2 : 1));
    // Non-zero bias so its gradient path is exercised with a generic value.
    if (bias) layer.bias()->assign(random_tensor(Shape{units}, -0.5f, 0.5f));
    Tensor x = random_tensor(Shape{batch, in});
    if (activation == Activation::Relu) {
      // Keep every pre-activation away from the kink, where the derivative
      // (and so the finite difference) is undefined.
      for (int attempt = 0; attempt < 1000 && min_abs_preactivation(layer, x) < 0.05; ++attempt) x = random_tensor(Shape{batch, in});
      QVERIFY(min_abs_preactivation(layer, x) >= 0.05);
    }
    Tensor r = random_tensor(Shape{batch, units});

    GradientTape tape;
    Tensor y = layer.call(x, true);
    QCOMPARE(y.shape(), (Shape{batch, units}));
    Tensor target = weighted_sum(y, r);
    std::vector<Tensor> sources{x, layer.kernel()->value()};
    if (bias) sources.push_back(layer.bias()->value());
    auto grads = tape.gradient(target, sources);

    auto objective = [&] { return weighted_sum_value(layer.call(x, true), r); };
    const std::string name = "dense(" + act_name(activation) + ")";
    STRATA_COMPARE_OK(fd_check(objective, x, grads[0], name + " d/dx"));
    STRATA_COMPARE_OK(fd_check(objective, layer.kernel()->value(), grads[1], name + " d/dkernel"));
    if (bias) STRATA_COMPARE_OK(fd_check(objective, layer.bias()->value(), grads[2], name + " d/dbias"));
  }

  void activation_layers_data() {
    QTest::addColumn<int>("act");
    for (auto a : {Activation::Relu, Activation::Tanh, Activation::Sigmoid, Activation::Softmax})
      QTest::newRow(act_name(a).c_str()) << int(a);
  }
  void activation_layers() {
    QFETCH(int, act);
    const auto activation = static_cast<Activation>(act);
    nn::LayerPtr layer = activation == Activation::Relu      ? nn::ReLU()
                         : activation == Activation::Tanh    ? nn::Tanh()
                         : activation == Activation::Sigmoid ? nn::Sigmoid()
                                                             : nn::Softmax();
    QCOMPARE(QString::fromStdString(layer->type()), QString::fromStdString(act_name(activation)));
    for (Shape shape : {Shape{3, 7}, Shape{2, 3, 4}}) {
      layer->build(Shape(std::vector<int64_t>(shape.dims().begin() + 1, shape.dims().end())));
      Tensor x = random_tensor(shape, -2.0f, 2.0f);
      if (activation == Activation::Relu)
        for (auto& v : x.span())
          if (std::fabs(v) < 0.05f) v = v < 0 ? -0.3f : 0.3f;
      Tensor r = random_tensor(shape);
      GradientTape tape;
      Tensor y = layer->call(x, true);
      QCOMPARE(y.shape(), shape);
      auto grads = tape.gradient(weighted_sum(y, r), std::vector<Tensor>{x});
      STRATA_COMPARE_OK(fd_check([&] { return weighted_sum_value(layer->call(x, true), r); }, x, grads[0],
                                 layer->type() + " " + shape.str() + " d/dx"));
      if (activation == Activation::Softmax) {
        // Rows of the last axis sum to one.
        const int64_t cols = shape[shape.rank() - 1];
        for (int64_t row = 0; row < y.numel() / cols; ++row) {
          double s = 0;
          for (int64_t c = 0; c < cols; ++c) s += y.data()[row * cols + c];
          QVERIFY(std::fabs(s - 1.0) < 1e-5);
        }
      }
    }
  }

  void flatten() {
    auto layer = nn::Flatten();
    layer->build(Shape{3, 4, 2});
    QCOMPARE(layer->output_shape(Shape{3, 4, 2}), (Shape{24}));
    Tensor x = random_tensor(Shape{2, 3, 4, 2});
    Tensor r = random_tensor(Shape{2, 24});
    GradientTape tape;
    Tensor y = layer->call(x, true);
    QCOMPARE(y.shape(), (Shape{2, 24}));
    for (int64_t i = 0; i < x.numel(); ++i) QCOMPARE(y.data()[i], x.data()[i]);
    auto grads = tape.gradient(weighted_sum(y, r), std::vector<Tensor>{x});
    QCOMPARE(grads[0].shape(), x.shape());  // reshaped back
    STRATA_COMPARE_OK(compare(grads[0].span(), r.span(), 0, 0, "flatten d/dx == r"));
    STRATA_COMPARE_OK(fd_check([&] { return weighted_sum_value(layer->call(x, true), r); }, x, grads[0], "flatten d/dx"));
  }

  void flatten_then_dense() {
    nn::Sequential model{nn::Flatten(), nn::Dense(4, Activation::Tanh)};
    model.build(Shape{3, 2, 1});
    Tensor x = random_tensor(Shape{5, 3, 2, 1});
    Tensor r = random_tensor(Shape{5, 4});
    GradientTape tape;
    Tensor y = model(x, true, tape);
    auto vars = model.trainable_variables();
    QCOMPARE(vars.size(), size_t(2));
    auto grads = tape.gradient(weighted_sum(y, r), std::vector<Tensor>{x, vars[0]->value(), vars[1]->value()});
    auto objective = [&] { return weighted_sum_value(model(x, true), r); };
    STRATA_COMPARE_OK(fd_check(objective, x, grads[0], "flatten+dense d/dx"));
    STRATA_COMPARE_OK(fd_check(objective, vars[0]->value(), grads[1], "flatten+dense d/dkernel"));
    STRATA_COMPARE_OK(fd_check(objective, vars[1]->value(), grads[2], "flatten+dense d/dbias"));
  }

  void dropout_fixed_mask() {
    const float rate = 0.4f;
    const float scale = 1.0f / (1.0f - rate);
    nn::DropoutLayer layer(rate);
    layer.build(Shape{50});
    Tensor x = random_tensor(Shape{40, 50}, 0.5f, 1.5f);  // non-zero, so the mask is y / x
    Tensor r = random_tensor(Shape{40, 50});
    GradientTape tape;
    Tensor y = layer.call(x, true);
    auto grads = tape.gradient(weighted_sum(y, r), std::vector<Tensor>{x});
    std::vector<double> mask(static_cast<size_t>(x.numel())), want(mask.size());
    int64_t dropped = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double m = double(y.data()[i]) / x.data()[i];
      const bool zero = y.data()[i] == 0.0f;
      QVERIFY2(zero || std::fabs(m - scale) < 1e-5, qPrintable(QString("mask value %1 at %2").arg(m).arg(i)));
      mask[static_cast<size_t>(i)] = zero ? 0.0 : scale;
      dropped += zero;
      want[static_cast<size_t>(i)] = mask[static_cast<size_t>(i)] * r.data()[i];
    }
    // The analytic form with the mask applied: d/dx sum(r * mask * x) = r * mask.
    STRATA_COMPARE_OK(compare(grads[0].span(), want, 1e-6, 1e-6, "dropout d/dx == r * mask"));
    const double frac = double(dropped) / double(x.numel());
    // 2,000 draws: the fraction's standard deviation is 0.011, so +-0.05 is
    // 4.5 of them, and a rate of 0.3 or 0.5 would fail.
    QVERIFY2(frac > 0.35 && frac < 0.45, qPrintable(QString("dropped fraction %1 for rate 0.4").arg(frac)));

    // A second training call draws a different mask.
    Tensor y2 = layer.call(x, true);
    bool differs = false;
    for (int64_t i = 0; i < x.numel() && !differs; ++i) differs = (y2.data()[i] == 0.0f) != (y.data()[i] == 0.0f);
    QVERIFY(differs);
  }

  void dropout_masks_go_on_changing_past_2_pow_24_calls() {
    // A float call counter stops at 2^24 (16.7M steps): every step after it
    // would draw the same mask. And a run resumed there draws what the
    // uninterrupted run drew.
    const Json at = Json{{"calls", Json{{"0", uint64_t{1} << 24}}}};
    Tensor x = random_tensor(Shape{8, 64}, 0.5f, 1.5f);
    set_global_seed(21);  // each layer draws its seed when made: the same for both
    nn::DropoutLayer layer(0.5f);
    layer.build(Shape{64});
    layer.set_extra_state(at);
    const Tensor first = layer.call(x, true).clone(), second = layer.call(x, true).clone();
    bool differs = false;
    for (int64_t i = 0; i < x.numel() && !differs; ++i) differs = first.data()[i] != second.data()[i];
    QVERIFY2(differs, "the calls 2^24 and 2^24 + 1 drew the same mask");
    QCOMPARE(layer.extra_state()["calls"]["0"].get<uint64_t>(), (uint64_t{1} << 24) + 2);
    set_global_seed(21);
    nn::DropoutLayer resumed(0.5f);
    resumed.build(Shape{64});
    resumed.set_extra_state(Json{{"calls", Json{{"0", (uint64_t{1} << 24) + 1}}}});
    const Tensor again = resumed.call(x, true);
    for (int64_t i = 0; i < x.numel(); ++i) QCOMPARE(again.data()[i], second.data()[i]);
  }

  void dropout_inference_is_identity() {
    nn::DropoutLayer layer(0.5f);
    layer.build(Shape{6});
    Tensor x = random_tensor(Shape{3, 6});
    Tensor r = random_tensor(Shape{3, 6});
    GradientTape tape;
    Tensor y = layer.call(x, false);
    for (int64_t i = 0; i < x.numel(); ++i) QCOMPARE(y.data()[i], x.data()[i]);
    auto grads = tape.gradient(weighted_sum(y, r), std::vector<Tensor>{x});
    STRATA_COMPARE_OK(compare(grads[0].span(), r.span(), 0, 0, "dropout(inference) d/dx == r"));
    STRATA_EXPECT_ERROR(nn::DropoutLayer(1.0f), ErrorKind::BadInput, "rate");
    STRATA_EXPECT_ERROR(nn::DropoutLayer(-0.1f), ErrorKind::BadInput, "rate");
  }

  // ---- losses -----------------------------------------------------------------

  void losses_data() {
    QTest::addColumn<QString>("loss");
    QTest::addColumn<bool>("from_logits");
    QTest::addColumn<int>("reduction");
    const char* red_names[] = {"none", "sum", "mean"};
    for (int red = 0; red < 3; ++red) {
      for (bool logits : {true, false}) {
        QTest::newRow(qPrintable(QString("scce-%1-%2").arg(logits ? "logits" : "probs").arg(red_names[red]))) << "scce" << logits << red;
        QTest::newRow(qPrintable(QString("cce-%1-%2").arg(logits ? "logits" : "probs").arg(red_names[red]))) << "cce" << logits << red;
      }
      QTest::newRow(qPrintable(QString("mse-%1").arg(red_names[red]))) << "mse" << false << red;
    }
  }
  void losses() {
    QFETCH(QString, loss);
    QFETCH(bool, from_logits);
    QFETCH(int, reduction);
    const auto red = static_cast<nn::Reduction>(reduction);
    const int64_t batch = 6, classes = 5;

    // Predictions: logits in [-2, 2], or probabilities (a softmax of those).
    Tensor pred = random_tensor(Shape{batch, classes}, -2.0f, 2.0f);
    if (!from_logits && loss != "mse")
      cpu_backend().activation_forward(Activation::Softmax, pred.data(), pred.data(), batch, classes);
    Tensor sparse = Tensor::zeros(Shape{batch}, DType::Int32);
    Tensor dense_targets = Tensor::zeros(Shape{batch, classes});
    for (int64_t b = 0; b < batch; ++b) {
      const auto label = static_cast<int32_t>(testutil::rng()() % classes);
      sparse.ints()[b] = label;
      if (loss == "cce" && b % 2) {
        // Soft targets on odd rows (label smoothing style), one-hot on even.
        for (int64_t c = 0; c < classes; ++c) dense_targets.data()[b * classes + c] = 0.1f / float(classes - 1);
        dense_targets.data()[b * classes + label] = 0.9f;
      } else {
        dense_targets.data()[b * classes + label] = 1.0f;
      }
    }
    if (loss == "mse") dense_targets = random_tensor(Shape{batch, classes});

    std::unique_ptr<nn::Loss> fn;
    if (loss == "scce") fn = std::make_unique<nn::SparseCategoricalCrossentropy>(from_logits, red);
    else if (loss == "cce") fn = std::make_unique<nn::CategoricalCrossentropy>(from_logits, red);
    else fn = std::make_unique<nn::MeanSquaredError>(red);
    const Tensor& targets = loss == "scce" ? sparse : dense_targets;

    // Reference per-example values in double.
    std::vector<double> per(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) {
      const float* p = pred.data() + b * classes;
      double value = 0;
      if (loss == "mse") {
        for (int64_t c = 0; c < classes; ++c) {
          const double d = double(p[c]) - dense_targets.data()[b * classes + c];
          value += d * d / double(classes);
        }
      } else {
        // log-probabilities: log softmax of logits, or log of normalised p.
        std::vector<double> logp(static_cast<size_t>(classes));
        double norm = 0, mx = -1e30;
        for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, double(p[c]));
        for (int64_t c = 0; c < classes; ++c) norm += from_logits ? std::exp(double(p[c]) - mx) : double(p[c]);
        for (int64_t c = 0; c < classes; ++c)
          logp[static_cast<size_t>(c)] = from_logits ? double(p[c]) - mx - std::log(norm) : std::log(double(p[c]) / norm);
        if (loss == "scce") value = -logp[static_cast<size_t>(sparse.ints()[b])];
        else
          for (int64_t c = 0; c < classes; ++c) value -= double(dense_targets.data()[b * classes + c]) * logp[static_cast<size_t>(c)];
      }
      per[static_cast<size_t>(b)] = value;
    }

    GradientTape tape;
    Tensor out = (*fn)(targets, pred);
    if (red == nn::Reduction::None) {
      QCOMPARE(out.shape(), (Shape{batch}));
      STRATA_COMPARE_OK(compare(out.span(), per, 1e-5, 1e-5, "per-example loss values"));
    } else {
      QCOMPARE(out.numel(), int64_t{1});
      double total = 0;
      for (double v : per) total += v;
      if (red == nn::Reduction::Mean) total /= double(batch);
      QVERIFY2(std::fabs(out.item() - total) < 1e-5 + 1e-5 * std::fabs(total),
               qPrintable(QString("reduced loss %1, expected %2").arg(out.item()).arg(total)));
    }
    Tensor r = red == nn::Reduction::None ? random_tensor(out.shape()) : Tensor::full(out.shape(), 1.0f);
    auto grads = tape.gradient(weighted_sum(out, r), std::vector<Tensor>{pred});
    auto objective = [&] { return weighted_sum_value((*fn)(targets, pred), r); };
    // Probabilities are ~0.05..0.6: a smaller step keeps them well inside the clamp.
    const double step = from_logits || loss == "mse" ? kStep : 1e-3;
    STRATA_COMPARE_OK(fd_check(objective, pred, grads[0], QTest::currentDataTag() + std::string(" d/dpredictions"), step));
  }

  void loss_bad_shapes() {
    nn::SparseCategoricalCrossentropy scce(true);
    Tensor logits = random_tensor(Shape{4, 3});
    STRATA_EXPECT_ERROR(scce(Tensor::zeros(Shape{3}, DType::Int32), logits), ErrorKind::BadInput, "3 targets for 4");
    STRATA_EXPECT_ERROR(scce(Tensor::zeros(Shape{4}), logits), ErrorKind::BadInput, "int32");
    nn::CategoricalCrossentropy cce(true);
    STRATA_EXPECT_ERROR(cce(Tensor::zeros(Shape{4, 2}), logits), ErrorKind::BadInput, "CategoricalCrossentropy");
    nn::MeanSquaredError mse;
    STRATA_EXPECT_ERROR(mse(Tensor::zeros(Shape{4, 2}), logits), ErrorKind::BadInput, "MeanSquaredError");
  }

  void compute_average_loss() {
    const int64_t local = 5, global = 16;
    Tensor per = random_tensor(Shape{local}, 0.0f, 3.0f);
    GradientTape tape;
    Tensor avg = nn::compute_average_loss(per, global);
    double sum = 0;
    for (float v : per.span()) sum += v;
    QVERIFY(std::fabs(avg.item() - sum / double(global)) < 1e-6);
    auto grads = tape.gradient(avg, std::vector<Tensor>{per});
    STRATA_COMPARE_OK(compare(grads[0].span(), std::vector<double>(local, 1.0 / double(global)), 1e-9, 1e-6, "d avg / d per"));
    STRATA_COMPARE_OK(fd_check([&] { return double(nn::compute_average_loss(per, global).item()); }, per, grads[0],
                               "compute_average_loss d/dper"));
    STRATA_EXPECT_ERROR(nn::compute_average_loss(per, 0), ErrorKind::BadInput, "global batch size");
  }

  // Loss::average (the training step's loss): compute_average_loss of the
  // per-example losses in one op, the same bits as that pair; as the
  // tape's target its backward takes the one-kernel way (Node::unit), and
  // inside a larger expression the general one, to the same gradient.
  void loss_average_is_compute_average_loss_in_one_op_data() {
    QTest::addColumn<QString>("loss");
    QTest::addColumn<bool>("from_logits");
    QTest::newRow("scce-logits") << "scce" << true;
    QTest::newRow("scce-probs") << "scce" << false;
    QTest::newRow("cce-logits") << "cce" << true;
    QTest::newRow("mse") << "mse" << false;
  }
  void loss_average_is_compute_average_loss_in_one_op() {
    QFETCH(QString, loss);
    QFETCH(bool, from_logits);
    const int64_t batch = 6, classes = 4, global = 16;
    Tensor pred = random_tensor(Shape{batch, classes}, -2.0f, 2.0f);
    if (!from_logits) cpu_backend().activation_forward(Activation::Softmax, pred.data(), pred.data(), batch, classes);
    Tensor targets = loss == "scce" ? Tensor::zeros(Shape{batch}, DType::Int32)
                                    : random_tensor(Shape{batch, classes}, 0.0f, 1.0f);
    if (loss == "scce")
      for (int64_t b = 0; b < batch; ++b) targets.ints()[b] = static_cast<int32_t>(b % classes);
    std::unique_ptr<nn::Loss> fn;
    if (loss == "scce") fn = std::make_unique<nn::SparseCategoricalCrossentropy>(from_logits, nn::Reduction::None);
    else if (loss == "cce") fn = std::make_unique<nn::CategoricalCrossentropy>(from_logits, nn::Reduction::None);
    else fn = std::make_unique<nn::MeanSquaredError>(nn::Reduction::None);
    const Tensor scale = Tensor::scalar(1.0f / float(global));
    auto bits = [](const Tensor& t) {
      std::vector<uint32_t> w(static_cast<size_t>(t.numel()));
      std::memcpy(w.data(), t.data(), w.size() * 4);
      return w;
    };

    GradientTape pair_tape;
    const Tensor pair = nn::compute_average_loss((*fn)(targets, pred), scale);
    const Tensor pair_grad = pair_tape.gradient(pair, std::vector<Tensor>{pred})[0];
    GradientTape one_tape;
    const Tensor one = fn->average(targets, pred, scale);
    const Tensor one_grad = one_tape.gradient(one, std::vector<Tensor>{pred})[0];
    QCOMPARE(one.shape(), Shape{});
    QCOMPARE(bits(one), bits(pair));
    QCOMPARE(bits(one_grad), bits(pair_grad));

    // Not the target: d (3 * average) / d pred through the general backward.
    GradientTape outer_tape;
    const Tensor three = Tensor::scalar(3.0f);
    const Tensor outer = weighted_sum(fn->average(targets, pred, scale), three);
    const Tensor outer_grad = outer_tape.gradient(outer, std::vector<Tensor>{pred})[0];
    std::vector<double> want(static_cast<size_t>(outer_grad.numel()));
    for (size_t i = 0; i < want.size(); ++i) want[i] = 3.0 * double(one_grad.data()[i]);
    STRATA_COMPARE_OK(compare(outer_grad.span(), want, 1e-7, 1e-6, "3 * average: the general backward"));
    STRATA_EXPECT_ERROR(fn->average(targets, pred, Tensor::zeros(Shape{2})), ErrorKind::Runtime, "one value");
  }

  // The tape's own rule: an op's unit backward runs only where its output is
  // the differentiated target (the seed, all ones, is then never filled).
  void tape_uses_an_op_s_unit_backward_only_for_the_target() {
    Tensor x = random_tensor(Shape{3});
    int general = 0, unit = 0;
    auto op = [&](const Tensor& in) {
      Tensor y = Tensor::scalar(1.0f);
      record_op(
          {in}, y,
          [&](const Tensor& g, const std::vector<bool>&) {
            ++general;
            return std::vector<Tensor>{Tensor::full(Shape{3}, g.item())};
          },
          [&](const std::vector<bool>&) {
            ++unit;
            return std::vector<Tensor>{Tensor::full(Shape{3}, 1.0f)};
          });
      return y;
    };
    {
      GradientTape tape;
      const Tensor g = tape.gradient(op(x), std::vector<Tensor>{x})[0];
      QCOMPARE(unit, 1);
      QCOMPARE(general, 0);
      for (float v : g.span()) QCOMPARE(v, 1.0f);
    }
    {
      GradientTape tape;
      const Tensor g = tape.gradient(weighted_sum(op(x), Tensor::scalar(2.0f)), std::vector<Tensor>{x})[0];
      QCOMPARE(unit, 1);
      QCOMPARE(general, 1);
      for (float v : g.span()) QCOMPARE(v, 2.0f);
    }
  }

  void full_model_through_loss() {
    // Every weight of a small classifier, through SCCE(probabilities) and
    // compute_average_loss, as a training step computes it.
    nn::Sequential model{nn::Flatten(), nn::Dense(6, Activation::Sigmoid), nn::Dense(5, Activation::Tanh), nn::Dense(3),
                         nn::Softmax()};
    model.build(Shape{2, 2});
    Tensor x = random_tensor(Shape{7, 2, 2});
    Tensor y = Tensor::zeros(Shape{7}, DType::Int32);
    for (int64_t i = 0; i < 7; ++i) y.ints()[i] = static_cast<int32_t>(i % 3);
    nn::SparseCategoricalCrossentropy fn(false, nn::Reduction::None);
    auto vars = model.trainable_variables();
    QCOMPARE(vars.size(), size_t(6));
    GradientTape tape;
    Tensor loss = nn::compute_average_loss(fn(y, model(x, true, tape)), 7);
    auto grads = tape.gradient(loss, vars);
    auto objective = [&] { return double(nn::compute_average_loss(fn(y, model(x, true)), 7).item()); };
    for (size_t i = 0; i < vars.size(); ++i)
      STRATA_COMPARE_OK(fd_check(objective, vars[i]->value(), grads[i], vars[i]->name(), 2e-3, 1e-3, 2e-2));
  }

  void tape_fan_out_and_unrelated_sources() {
    Tensor x = random_tensor(Shape{4});
    Tensor unrelated = random_tensor(Shape{2, 2});
    Tensor r1 = random_tensor(Shape{4}), r2 = random_tensor(Shape{4});
    GradientTape tape;
    Tensor t = add_scalars(weighted_sum(x, r1), weighted_sum(x, r2));
    auto grads = tape.gradient(t, std::vector<Tensor>{x, unrelated});
    std::vector<double> want(4);
    for (size_t i = 0; i < 4; ++i) want[i] = double(r1.data()[i]) + r2.data()[i];
    STRATA_COMPARE_OK(compare(grads[0].span(), want, 1e-6, 1e-6, "fan-out sums the contributions"));
    QCOMPARE(grads[1].shape(), unrelated.shape());
    for (float v : grads[1].span()) QCOMPARE(v, 0.0f);
    // The tape stopped recording at gradient(); nothing is active any more.
    QVERIFY(GradientTape::active() == nullptr);
  }

  void tape_reports_each_gradient_once_it_is_final() {
    // The hook a distribution strategy reduces through while the backward
    // pass goes on: each source once, last layer first, with the value the
    // tape returns (a fan-out source only after all its contributions).
    nn::Sequential model{nn::Dense(6, Activation::Tanh), nn::Dense(5, Activation::Relu), nn::Dense(3)};
    model.build(Shape{4});
    Tensor x = random_tensor(Shape{7, 4});
    Tensor unrelated = random_tensor(Shape{3});
    std::vector<Tensor> sources;
    for (auto* v : model.trainable_variables()) sources.push_back(v->value());
    sources.push_back(unrelated);
    GradientTape tape;
    Tensor out = model(x, true, tape);
    Tensor target = add_scalars(weighted_sum(out, random_tensor(out.shape())), weighted_sum(out, random_tensor(out.shape())));
    std::vector<size_t> order;
    std::vector<std::vector<float>> at_report(sources.size());
    auto grads = tape.gradient(target, sources, [&](size_t i, const Tensor& g) {
      order.push_back(i);
      at_report[i] = g.values();
    });
    QCOMPARE(order.size(), sources.size());
    QCOMPARE(std::set<size_t>(order.begin(), order.end()).size(), sources.size());
    auto position = [&](size_t i) { return std::find(order.begin(), order.end(), i) - order.begin(); };
    // kernel/bias of layer 3 (4, 5) before layer 2's (2, 3) before layer 1's (0, 1)
    QVERIFY(std::max(position(4), position(5)) < std::min(position(2), position(3)));
    QVERIFY(std::max(position(2), position(3)) < std::min(position(0), position(1)));
    for (size_t i = 0; i < sources.size(); ++i) QCOMPARE(at_report[i], grads[i].values());

    Tensor y = random_tensor(Shape{4});
    Tensor r1 = random_tensor(Shape{4}), r2 = random_tensor(Shape{4});
    std::vector<float> fan_out;
    GradientTape tape2;
    Tensor t = add_scalars(weighted_sum(y, r1), weighted_sum(y, r2));
    tape2.gradient(t, std::vector<Tensor>{y}, [&](size_t, const Tensor& g) { fan_out = g.values(); });
    for (size_t i = 0; i < 4; ++i) QVERIFY(std::fabs(fan_out[i] - (r1.data()[i] + r2.data()[i])) < 1e-6f);
  }

private:
  static double min_abs_preactivation(nn::DenseLayer& layer, const Tensor& x) {
    const int64_t batch = x.shape()[0], in = x.shape()[1], out = layer.units();
    const float* w = layer.kernel()->value().data();
    const float* b = layer.bias() ? layer.bias()->value().data() : nullptr;
    double m = 1e30;
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t j = 0; j < out; ++j) {
        double z = b ? b[j] : 0.0;
        for (int64_t p = 0; p < in; ++p) z += double(x.data()[i * in + p]) * w[p * out + j];
        m = std::min(m, std::fabs(z));
      }
    return m;
  }
};

QTEST_APPLESS_MAIN(TestGradients)
#include "test_gradients.moc"
