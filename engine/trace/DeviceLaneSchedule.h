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

  // Bursts are runs of step numbers, not of calls, so that a pass finding
  // no batch at an epoch's end spends none of a burst, and so that the
  // ranks of a multi-worker run, given the same first step, mark the same
  // steps: one of them decides when (due, from its clock), all begin it.
  //
  // The first step of a new burst when one is due at `now` (seconds, any
  // monotonic clock): `earliest`, the first step not yet started, once the
  // current burst has no step from `earliest` on and the period since it
  // began has passed (at once before the first burst); none otherwise, and
  // never unless sampled.
  std::optional<int64_t> due(double now, int64_t earliest) const;
  // Begins a burst with step `first`; `now` is when it was decided.
  void begin(int64_t first, double now);
  bool started() const { return started_; }
  // Whether step `step` is marked.
  bool marks(int64_t step) const;

  // One process deciding alone, at each step's start in step order: begins
  // a burst with `step` when one is due, then says whether it is marked.
  bool mark_step(int64_t step, double now);

private:
  DeviceLanes mode_;
  int burst_steps_;
  double period_;
  int64_t first_ = 0;      // the current (or last) burst's first step
  double decided_at_ = 0;  // when it was decided
  bool started_ = false;   // a burst has begun
};

}  // namespace strata::trace
