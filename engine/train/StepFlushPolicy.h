#pragma once
#include <chrono>
#include <variant>

#include "train/Events.h"

namespace strata {

// When a writer of the event stream (a file, a pipe) flushes: after every
// event, except those that come once per step (a step, and with tracing its
// step_spans), which are
// flushed only once `period` has passed since the last flush, so a short
// step does not pay a system call. A step's step_spans follows its step
// event: it is flushed with it, or a slow traced run would show each step's
// breakdown one step late.
class StepFlushPolicy {
public:
  using Clock = std::chrono::steady_clock;
  explicit StepFlushPolicy(Clock::duration period) : period_(period) {}
  // Whether to flush now, `e` just written.
  bool due(const Event& e) {
    const auto now = Clock::now();
    const bool spans_of_flushed_step = std::holds_alternative<StepSpansEvent>(e) && step_flushed_;
    const bool per_step = std::holds_alternative<StepEvent>(e) || std::holds_alternative<StepSpansEvent>(e);
    const bool flush = !per_step || now - last_flush_ >= period_ || spans_of_flushed_step;
    if (flush) last_flush_ = now;
    step_flushed_ = flush && std::holds_alternative<StepEvent>(e);
    return flush;
  }

private:
  Clock::duration period_;
  Clock::time_point last_flush_ = Clock::now();
  bool step_flushed_ = false;  // the last event was a step event, flushed
};

}  // namespace strata
