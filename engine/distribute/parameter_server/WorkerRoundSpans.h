#pragma once
// A parameter-server worker's round on the step timeline: the round from
// pull to push, the pull and the push, with the bytes that crossed (the
// weights pulled are the size of the gradients pushed). Workers in one
// process (ClusterCoordinator) and worker ranks (ParameterServerRun) record
// the same three spans.
#include <cstdint>
#include <vector>

#include "core/Tensor.h"
#include "trace/TraceRecorder.h"

namespace strata {

// Times in seconds on the monotonic clock; nothing when `recorder` is null.
inline void record_worker_round(trace::TraceRecorder* recorder, int worker, int64_t round, const std::vector<Tensor>& grads,
                                double start, double pulled_at, double push_start, double end) {
  if (!recorder) return;
  int64_t bytes = 0;
  for (const Tensor& g : grads) bytes += static_cast<int64_t>(g.bytes());
  const trace::Lane lane{trace::LaneKind::Worker, worker};
  recorder->record(trace::Span{trace::SpanKind::Step, lane, round, start * 1e6, (end - start) * 1e6, 0});
  recorder->record(trace::Span{trace::SpanKind::Pull, lane, round, start * 1e6, (pulled_at - start) * 1e6, bytes});
  recorder->record(trace::Span{trace::SpanKind::Push, lane, round, push_start * 1e6, (end - push_start) * 1e6, bytes});
}

}  // namespace strata
