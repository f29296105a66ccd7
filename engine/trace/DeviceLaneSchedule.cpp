#include "trace/DeviceLaneSchedule.h"

#include <algorithm>

namespace strata::trace {

DeviceLaneSchedule::DeviceLaneSchedule(DeviceLanes mode, int burst_steps, double period_seconds)
    : mode_(mode), burst_steps_(std::max(1, burst_steps)), period_(std::max(0.0, period_seconds)) {}

bool DeviceLaneSchedule::mark_step(double now) {
  if (mode_ != DeviceLanes::Sampled) return mode_ == DeviceLanes::EveryStep;
  if (left_ > 0) {
    --left_;
    return true;
  }
  if (started_ && now - burst_start_ < period_) return false;
  started_ = true;
  burst_start_ = now;
  left_ = burst_steps_ - 1;
  return true;
}

}  // namespace strata::trace
