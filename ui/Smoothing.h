#pragma once
// EMA smoothing as TensorBoard draws it. Kept free of Qt so it can be tested
// against a closed-form reference and reused by any front end.
#include <cstdint>
#include <span>
#include <vector>

namespace strata::ui {

// Exponential moving average with TensorBoard's debiasing: the accumulator
// starts at 0, so early values are divided by (1 - weight^n) instead of being
// dragged towards zero. Non-finite values pass through unchanged and do not
// enter the average (a NaN must stay visible, never be smoothed away).
class EmaSmoother {
public:
  explicit EmaSmoother(double weight = 0.0) : weight_(weight) {}
  double push(double value);
  void reset() { last_ = 0.0, count_ = 0; }
  double weight() const { return weight_; }

private:
  double weight_;
  double last_ = 0.0;
  int64_t count_ = 0;
};

// The whole series at once; weight in [0, 1).
std::vector<double> smooth_ema(std::span<const double> values, double weight);

}  // namespace strata::ui
