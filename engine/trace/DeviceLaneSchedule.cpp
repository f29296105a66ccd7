#include "trace/DeviceLaneSchedule.h"

#include <algorithm>

namespace strata::trace {

const char* device_lanes_name(DeviceLanes lanes) {
  switch (lanes) {
    case DeviceLanes::Off: return "off";
    case DeviceLanes::Sampled: return "sampled";
    case DeviceLanes::EveryStep: return "every-step";
  }
  return "sampled";
}

std::optional<DeviceLanes> device_lanes_from_name(std::string_view name) {
  for (DeviceLanes l : {DeviceLanes::Off, DeviceLanes::Sampled, DeviceLanes::EveryStep})
    if (name == device_lanes_name(l)) return l;
  return std::nullopt;
}

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
