#pragma once
// Which steps get device lanes. Each device lane is a few timing marks in
// the device's stream, and on a short step they are what tracing costs: on
// an H200 a replayed 108 us MLP step ran at 0.83 of its untraced speed with
// marks in every step. Sampled (the default), the marks come in bursts of
// consecutive steps, a burst starting at most once per period, as a
// profiler's schedule records a few active steps among many. With the
// defaults a step of 12.5 ms or more still gets them every time (a burst
// outlasts the period), a 100 us step one in 125, and whatever the step
// time the marks cost at most 80 marked steps a second beyond a slow run's.
// Every step (EveryStep) is there for a trace that must show each step's
// device.
#include <cstdint>
#include <optional>
#include <string_view>

namespace strata::trace {

enum class DeviceLanes { Off, Sampled, EveryStep };
// "sampled", "every-step", "off": strata-run's --device-lanes values.
const char* device_lanes_name(DeviceLanes lanes);
std::optional<DeviceLanes> device_lanes_from_name(std::string_view name);

class DeviceLaneSchedule {
public:
  // The dashboard's Timeline tab shows 20 steps: a burst fills it.
  static constexpr int kBurstSteps = 20;
  static constexpr double kPeriodSeconds = 0.25;

  explicit DeviceLaneSchedule(DeviceLanes mode, int burst_steps = kBurstSteps, double period_seconds = kPeriodSeconds);
  // Whether the step starting at `now` (seconds, any monotonic clock) is
  // marked; called once per step, in step order.
  bool mark_step(double now);

private:
  DeviceLanes mode_;
  int burst_steps_;
  double period_;
  int left_ = 0;            // marked steps left in the current burst
  double burst_start_ = 0;  // when the current (or last) burst began
  bool started_ = false;    // a burst has begun
};

}  // namespace strata::trace
