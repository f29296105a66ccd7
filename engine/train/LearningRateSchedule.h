#pragma once
// The learning rate of every step of a run, as a pure function of the step:
// a resumed run, any replica and any rank compute the same value without
// sharing state. The formulas are Keras': ExponentialDecay (not staircase,
// one decay period per epoch), CosineDecay (alpha = min_lr / lr) with a
// linear warm-up from 0, and a step decay as Keras users write with
// LearningRateScheduler.
#include <cstdint>

#include "train/RunConfig.h"

namespace strata {

class LearningRateSchedule {
public:
  // base: the optimizer's learning rate (the peak, after any warm-up);
  // total_epochs: the run's length, which cosine decays over.
  LearningRateSchedule(const LrScheduleConfig& config, double base, int64_t steps_per_epoch, int total_epochs);

  // The rate of the step with 0-based index `step` over the whole run.
  double at(int64_t step) const;
  bool constant() const;

private:
  LrScheduleConfig c_;
  double base_;
  int64_t steps_per_epoch_, total_steps_, warmup_steps_;
};

// Whether the settings keep the rate at the optimizer's (no schedule, no
// warm-up): what a project omits when saved and what a multi-server
// parameter-server run requires.
bool is_constant(const LrScheduleConfig& config);

// Problems with a schedule's settings, each naming its field under `path`
// (e.g. "training.lr_schedule"); empty when they are good.
std::vector<std::string> check_lr_schedule(const LrScheduleConfig& config, double base, const std::string& path);

}  // namespace strata
