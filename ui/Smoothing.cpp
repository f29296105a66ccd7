#include "Smoothing.h"

#include <cmath>

namespace strata::ui {

double EmaSmoother::push(double value) {
  if (!std::isfinite(value)) return value;
  last_ = last_ * weight_ + (1.0 - weight_) * value;
  ++count_;
  // weight 1 would freeze the average at 0; TensorBoard skips debiasing there.
  const double debias = weight_ == 1.0 ? 1.0 : 1.0 - std::pow(weight_, static_cast<double>(count_));
  return last_ / debias;
}

std::vector<double> smooth_ema(std::span<const double> values, double weight) {
  EmaSmoother s(weight);
  std::vector<double> out;
  out.reserve(values.size());
  for (double v : values) out.push_back(s.push(v));
  return out;
}

}  // namespace strata::ui
