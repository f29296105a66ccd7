#pragma once
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
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
  ~StepTracer();
  StepTracer(const StepTracer&) = delete;
  StepTracer& operator=(const StepTracer&) = delete;
  // Writes the spans to a Chrome trace file from now on (bad_input naming
  // it when it cannot be written), on a thread of its own: formatting and
  // writing cost the training thread nothing. At most max_bytes (0: no
  // limit): later spans are left out of the file, with one warning.
  void open_file(const std::string& path, int64_t max_bytes = 0);

  trace::TraceRecorder* recorder() { return &recorder_; }
  void set_listener(Listener listener) { listener_ = std::move(listener); }
  // Called between steps on the training thread. Every call: the spans
  // recorded so far are drained and the steps up to `completed` get their
  // step_spans events (a parameter-server worker may already be recording a
  // later round: its spans wait for that round's flush), so this work is
  // spread evenly over the steps: a step graph keeps the host at most one
  // step ahead of the GPU, and a stall of many steps' summaries at once
  // would leave the GPU idle. The drained spans go on to the trace file's
  // thread and the listener twenty times a second at most (by `time`,
  // seconds): the dashboard redraws no faster, and waking the file thread
  // after every short step costs more than recording the spans does.
  void flush(double time, int64_t completed);
  // The last flush, the trace file finished under its name, and a warning
  // when spans were lost (a buffer filled between two flushes).
  void close(double time);

private:
  static constexpr double kFlushSeconds = 0.05;
  // Drains the recorder into unsent_ and emits the step_spans events of the
  // steps up to `completed`.
  void collect(double time, int64_t completed);
  // unsent_ to the listener and the file thread.
  void send();
  // The step_spans events of the steps up to `completed`; spans of later
  // steps wait in later_ for their flush.
  void summarize(double time, int64_t completed, const std::vector<trace::Span>& spans);

  void write_file();  // the file thread's loop
  void stop_file();   // ends the file thread; rethrows what it failed with
  // Once, on the training thread: the file reached its limit.
  void warn_if_file_full(double time);

  trace::TraceRecorder recorder_;
  trace::TraceMetadata meta_;
  EventSink& sink_;
  Listener listener_;
  std::vector<trace::Span> later_;   // spans of steps not completed at the last flush
  std::vector<trace::Span> unsent_;  // drained, not yet with the listener and the file thread
  double last_send_ = -1;            // flush()'s `time` when it last sent spans on
  std::unique_ptr<trace::ChromeTraceWriter> file_;
  std::thread file_thread_;
  std::mutex file_mutex_;
  std::condition_variable file_cv_;
  std::vector<trace::Span> file_queue_;  // spans for the file thread
  bool file_closing_ = false;
  std::exception_ptr file_error_;
  std::string file_path_;
  int64_t file_max_bytes_ = 0;
  // Set by the file thread once spans are left out of the file, with the earliest step among them (-1: none).
  std::atomic<bool> file_full_{false};
  std::atomic<int64_t> file_full_at_step_{-1};
  bool file_full_reported_ = false;
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
