#pragma once
// Where each step's time went, per lane: the figures under the dashboard's
// Timeline tab and in the JSONL stream's `step_breakdown` events.
#include <array>
#include <vector>

#include "trace/Span.h"

namespace strata::trace {

struct LaneBreakdown {
  Lane lane;
  double step_us = 0;                        // the lane's Step span (0 when it has none)
  std::array<double, kSpanKinds> kind_us{};  // summed durations of each kind within the step
};

struct StepBreakdown {
  int64_t step = -1;
  std::vector<LaneBreakdown> lanes;  // in display order (lane_before)
  // Index into lanes of the replica/worker that kept the others waiting: the
  // longest step less its waits for the others (-1: none).
  int slowest = -1;
  // Communication (all-reduce, reduce-scatter, all-gather) time of the step,
  // and how much of it ran while the same replica computed (forward or
  // backward on its replica lane overlapping a span of its comm-stream lane).
  double comm_us = 0, comm_hidden_us = 0;
};

// One breakdown per step present in `spans` (any order), ascending by step.
// Spans with step < 0 are ignored. A span nested in another of the same lane
// (a collective inside the optimizer's update) counts for its own kind, not
// also for the outer one: kind_us are exclusive times.
std::vector<StepBreakdown> summarize_steps(const std::vector<Span>& spans);

}  // namespace strata::trace
