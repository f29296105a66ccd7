#pragma once
// Finite-difference gradient checks for layers: f(x, w) = sum(y * R) for a
// fixed random R, analytic gradients from the tape against central
// differences.
#include <QtTest>

#include <cmath>
#include <functional>

#include "backend/Backend.h"
#include "core/Rng.h"
#include "nn/GradientTape.h"
#include "nn/Layer.h"

namespace strata::test {

inline Tensor random_tensor(const Shape& shape, uint64_t seed, float scale = 1.0f) {
  Tensor t = Tensor::empty(shape);
  Rng rng(seed);
  for (auto& v : t.span()) v = scale * (2.0f * rng.uniform() - 1.0f);
  return t;
}

// sum(y * r) as a recorded op, on y's device (summed on the host in double).
inline Tensor weighted_sum(const Tensor& y, const Tensor& r) {
  const std::vector<float> yv = y.values(), rv = r.values();
  double s = 0;
  for (size_t i = 0; i < yv.size(); ++i) s += static_cast<double>(yv[i]) * rv[i];
  Tensor out = Tensor::scalar(static_cast<float>(s), y.device());
  const Tensor r_on = r.to(y.device());
  record_op({y}, out, [r_on](const Tensor& g, const std::vector<bool>&) {
    // d = g * r: one row of r scaled by the scalar g.
    Tensor d = Tensor::empty(r_on.shape(), g.device());
    backend_for(g.device()).scale_rows(r_on.ptr(), g.ptr(), 1, r_on.numel(), d.ptr());
    return std::vector<Tensor>{d};
  });
  return out;
}

// Checks d f / d x and d f / d w for every trainable variable of `layer`.
inline void check_layer_gradients(nn::Layer& layer, const Tensor& x, bool training, double tolerance = 2e-2,
                                  float eps = 1e-2f) {
  Tensor probe = layer.call(x, training);
  Tensor r = random_tensor(probe.shape(), 77);
  auto vars = layer.trainable_variables();
  auto f = [&]() -> double {
    Tensor y = layer.call(x, training);
    double s = 0;
    for (int64_t i = 0; i < y.numel(); ++i) s += static_cast<double>(y.data()[i]) * r.data()[i];
    return s;
  };
  std::vector<Tensor> sources{x};
  for (auto* v : vars) sources.push_back(v->value());
  std::vector<Tensor> analytic;
  {
    GradientTape tape;
    Tensor y = layer.call(x, training);
    analytic = tape.gradient(weighted_sum(y, r), sources);
  }
  for (size_t s = 0; s < sources.size(); ++s) {
    Tensor t = sources[s];
    const int64_t n = t.numel();
    // Up to 40 coordinates spread over the tensor.
    const int64_t stride = std::max<int64_t>(1, n / 40);
    double worst = 0, scale = 1e-3;
    for (int64_t i = 0; i < n; i += stride) {
      const float keep = t.data()[i];
      t.data()[i] = keep + eps;
      const double up = f();
      t.data()[i] = keep - eps;
      const double down = f();
      t.data()[i] = keep;
      const double numeric = (up - down) / (2.0 * eps);
      const double a = analytic[s].data()[i];
      worst = std::max(worst, std::abs(numeric - a));
      scale = std::max(scale, std::max(std::abs(numeric), std::abs(a)));
    }
    QVERIFY2(worst / scale <= tolerance, qPrintable(QString("%1 source %2: worst abs error %3 vs scale %4")
                                                       .arg(QString::fromStdString(layer.type()))
                                                       .arg(s)
                                                       .arg(worst)
                                                       .arg(scale)));
  }
}

}  // namespace strata::test
