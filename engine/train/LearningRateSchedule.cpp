#include "train/LearningRateSchedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

namespace strata {

LearningRateSchedule::LearningRateSchedule(const LrScheduleConfig& config, double base, int64_t steps_per_epoch,
                                           int total_epochs)
    : c_(config),
      base_(base),
      steps_per_epoch_(std::max<int64_t>(1, steps_per_epoch)),
      total_steps_(steps_per_epoch_ * std::max(1, total_epochs)),
      warmup_steps_(static_cast<int64_t>(std::llround(config.warmup_epochs * static_cast<double>(steps_per_epoch_)))) {}

bool is_constant(const LrScheduleConfig& c) { return c.type == "constant" && c.warmup_epochs <= 0; }

bool LearningRateSchedule::constant() const { return is_constant(c_); }

double LearningRateSchedule::at(int64_t step) const {
  step = std::max<int64_t>(0, step);
  // Warm-up: from base / W at the first step to base at step W.
  const double ramp = step < warmup_steps_ ? static_cast<double>(step + 1) / static_cast<double>(warmup_steps_) : 1.0;
  const double epochs_done = static_cast<double>(step) / static_cast<double>(steps_per_epoch_);
  if (c_.type == "step") return ramp * base_ * std::pow(c_.factor, std::floor(epochs_done / c_.every_epochs));
  if (c_.type == "exponential") return ramp * base_ * std::pow(c_.decay_rate, epochs_done);
  if (c_.type == "cosine") {
    if (step < warmup_steps_) return ramp * base_;
    // Keras CosineDecay after its warm-up: half a cosine from base down to
    // min_lr over the steps left, held at min_lr past the end.
    const double span = static_cast<double>(std::max<int64_t>(1, total_steps_ - warmup_steps_));
    const double p = std::min(1.0, static_cast<double>(step - warmup_steps_) / span);
    return c_.min_lr + (base_ - c_.min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * p));
  }
  return ramp * base_;
}

std::vector<std::string> check_lr_schedule(const LrScheduleConfig& c, double base, const std::string& path) {
  std::vector<std::string> problems;
  if (c.type != "constant" && c.type != "step" && c.type != "exponential" && c.type != "cosine")
    problems.push_back(path + ".type: must be one of constant, step, exponential, cosine, got \"" + c.type + "\"");
  if (!(c.warmup_epochs >= 0 && c.warmup_epochs <= 1e6))
    problems.push_back(path + ".warmup_epochs: must be a number of epochs >= 0");
  if (c.type == "step") {
    if (c.every_epochs < 1) problems.push_back(path + ".every_epochs: must be a positive integer");
    if (!(c.factor > 0 && c.factor <= 1)) problems.push_back(path + ".factor: must be a number in (0, 1]");
  }
  if (c.type == "exponential" && !(c.decay_rate > 0 && c.decay_rate <= 1))
    problems.push_back(path + ".decay_rate: must be a number in (0, 1]");
  if (c.type == "cosine" && !(c.min_lr >= 0 && c.min_lr < base))
    problems.push_back(path + ".min_lr: must be >= 0 and below the learning rate (" + std::to_string(base) + ")");
  return problems;
}

}  // namespace strata
