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

std::optional<int64_t> DeviceLaneSchedule::due(double now, int64_t earliest) const {
  if (mode_ != DeviceLanes::Sampled) return std::nullopt;
  if (!started_) return earliest;
  if (earliest < first_ + burst_steps_ || now - decided_at_ < period_) return std::nullopt;
  return earliest;
}

void DeviceLaneSchedule::begin(int64_t first, double now) {
  started_ = true;
  first_ = first;
  decided_at_ = now;
}

bool DeviceLaneSchedule::marks(int64_t step) const {
  if (mode_ != DeviceLanes::Sampled) return mode_ == DeviceLanes::EveryStep;
  return started_ && step >= first_ && step < first_ + burst_steps_;
}

bool DeviceLaneSchedule::mark_step(int64_t step, double now) {
  if (const auto first = due(now, step)) begin(*first, now);
  return marks(step);
}

}  // namespace strata::trace
