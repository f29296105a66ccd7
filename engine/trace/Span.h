#pragma once
// One stretch of work on the step timeline (docs/timeline.md): what a replica,
// a worker or a communication stream did, from when to when, in which step.
// The engine records them (TraceRecorder), writes them as Chrome trace events
// (ChromeTrace) and streams them to the dashboard's Timeline tab.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata::trace {

enum class SpanKind : uint8_t {
  Step,          // a whole training step of one replica (the lane's frame)
  DataWait,      // waiting for the input pipeline's next batch
  HostToDevice,  // the batch copied to the replica's device
  Forward,
  Backward,
  AllReduce,       // one bucket or fusion buffer all-reduced (bytes set)
  ReduceScatter,   // the sharded update's gradient reduction (bytes set)
  AllGather,       // the sharded update's weight gather (bytes set)
  Optimizer,       // the optimizer update (of this replica's shard when sharded)
  CollectiveWait,  // a barrier or collective waiting for the other replicas/workers
  Checkpoint,
  Evaluation,
  Pull,           // parameter server: weights pulled (bytes set)
  Push,           // parameter server: gradients pushed (bytes set)
  StalenessWait,  // parameter server: a worker held back by the staleness bound
};
inline constexpr int kSpanKinds = 15;

// Stable names: trace files, the JSONL summary and the dashboard use these.
constexpr std::string_view span_kind_name(SpanKind k) {
  constexpr std::string_view names[kSpanKinds] = {
      "step",       "data_wait",      "host_to_device", "forward",   "backward",
      "all_reduce", "reduce_scatter", "all_gather",     "optimizer", "collective_wait",
      "checkpoint", "evaluation",     "pull",           "push",      "staleness_wait"};
  return names[static_cast<int>(k)];
}
// The kind a name stands for (reading trace files and summaries back).
std::optional<SpanKind> parse_span_kind(std::string_view name);

// A lane is one row of the timeline: replica or worker `index` of this
// process, or a communication stream beside it, or what the replica's device
// executed (an accelerator's stream, timed by the device: trace/DeviceSpans).
enum class LaneKind : uint8_t { Replica, Worker, Server, CommStream, Run, Device };

struct Lane {
  LaneKind kind = LaneKind::Replica;
  int index = 0;
  // The process (MPI rank) the lane belongs to, set only where spans of
  // several processes meet: a merged trace file read back. -1, as every
  // recorder writes it, is "this process", so a single process's lanes are
  // named and ordered as they always were. (It fits in the padding of Span:
  // recording costs the same.)
  int rank = -1;
  friend bool operator==(const Lane&, const Lane&) = default;
};

// "replica 0", "replica 0 device", "replica 0 comm", "worker 1", "server 0", "run": trace files,
// the JSONL summary and the dashboard name lanes alike; a lane of a rank is
// "rank 1 · replica 0".
std::string lane_name(Lane lane);
// Display order within a process: each replica with its comm stream right
// under it, then workers, servers and the run lane. (The rank is not part
// of it: a trace file's thread_sort_index is per process.)
int lane_sort_index(Lane lane);
// Display order: by rank (this process's lanes first), then lane_sort_index.
inline bool lane_before(Lane a, Lane b) {
  return a.rank != b.rank ? a.rank < b.rank : lane_sort_index(a) < lane_sort_index(b);
}

struct Span {
  SpanKind kind = SpanKind::Step;
  Lane lane;
  int64_t step = -1;    // the training step it belongs to (-1: none, e.g. a checkpoint between epochs)
  double start_us = 0;  // microseconds on the process's monotonic clock (monotonic_seconds() * 1e6)
  double duration_us = 0;
  int64_t bytes = 0;  // communication spans: payload bytes; else 0
};

}  // namespace strata::trace
