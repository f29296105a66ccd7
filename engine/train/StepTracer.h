#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "trace/ChromeTrace.h"
#include "trace/TraceRecorder.h"
#include "train/Events.h"
#include "train/RunConfig.h"

namespace strata {

// A run's step timeline (docs/timeline.md): the recorder the replica
// threads write spans into and where the spans go after each step - the
// trace file, a step_spans event per step, and a listener (the dashboard's
// Timeline tab).
class StepTracer {
public:
  using Listener = std::function<void(const std::vector<trace::Span>&)>;
  StepTracer(const trace::TraceMetadata& meta, EventSink& sink) : meta_(meta), sink_(sink) {}
  // Writes the spans to a Chrome trace file from now on (bad_input naming
  // it when it cannot be written).
  void open_file(const std::string& path) { file_ = std::make_unique<trace::ChromeTraceWriter>(path, meta_); }

  trace::TraceRecorder* recorder() { return &recorder_; }
  void set_listener(Listener listener) { listener_ = std::move(listener); }
  // Called between steps on the training thread: everything recorded so far.
  void flush(double time);
  // The last flush, the trace file finished under its name, and a warning
  // when spans were lost (a buffer filled between two flushes).
  void close(double time);

private:
  trace::TraceRecorder recorder_;
  trace::TraceMetadata meta_;
  EventSink& sink_;
  std::unique_ptr<trace::ChromeTraceWriter> file_;
  Listener listener_;
};

class Cluster;
// Microseconds to add to this process's monotonic clock to read rank 0's
// (0 with one process): each round, the workers leave a collective together
// and read their clocks at once; the median of five rounds.
double clock_offset_to_rank0_us(Cluster& cluster);

// The file rank `rank` of `size` writes for `--trace FILE`: FILE itself
// with one process, else FILE with ".rankN" before its extension.
std::string rank_trace_file(const std::string& file, int rank, int size);

}  // namespace strata
