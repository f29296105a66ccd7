#include "train/StepTracer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "distribute/Cluster.h"
#include "trace/StepBreakdown.h"

namespace strata {

namespace {
// Microseconds to milliseconds, to the microsecond: the JSONL line stays short.
double ms(double us) { return std::round(us) / 1000; }
}  // namespace

StepTracer::~StepTracer() {
  try {
    stop_file();
  } catch (...) {
    // A destructor cannot report; close() does.
  }
}

void StepTracer::open_file(const std::string& path, int64_t max_bytes) {
  stop_file();
  file_ = std::make_unique<trace::ChromeTraceWriter>(path, meta_, max_bytes);
  file_path_ = path;
  file_max_bytes_ = max_bytes;
  file_full_ = false;
  file_full_at_step_ = -1;
  file_full_reported_ = false;
  file_closing_ = false;
  file_thread_ = std::thread([this] { write_file(); });
}

void StepTracer::write_file() {
  std::vector<trace::Span> batch;
  for (;;) {
    {
      std::unique_lock lock(file_mutex_);
      file_cv_.wait(lock, [&] { return !file_queue_.empty() || file_closing_; });
      if (file_queue_.empty()) return;  // closing, everything written
      batch.swap(file_queue_);
    }
    try {
      file_->write(batch);
      if (file_->spans_left_out() > 0) {
        file_full_at_step_.store(file_->first_step_left_out(), std::memory_order_relaxed);
        file_full_.store(true, std::memory_order_release);
      }
    } catch (...) {
      std::lock_guard lock(file_mutex_);
      file_error_ = std::current_exception();
      file_queue_.clear();
      return;
    }
    batch.clear();
  }
}

void StepTracer::stop_file() {
  if (!file_thread_.joinable()) return;
  {
    std::lock_guard lock(file_mutex_);
    file_closing_ = true;
  }
  file_cv_.notify_one();
  file_thread_.join();
  std::unique_ptr<trace::ChromeTraceWriter> file = std::move(file_);
  if (file_error_) std::rethrow_exception(std::exchange(file_error_, nullptr));
  file->close();
}

void StepTracer::flush(double time, int64_t completed) {
  collect(time, completed);
  if (time - last_send_ < kFlushSeconds) return;
  last_send_ = time;
  send();
  warn_if_file_full(time);
}

void StepTracer::warn_if_file_full(double time) {
  if (file_full_reported_ || !file_full_.load(std::memory_order_acquire)) return;
  file_full_reported_ = true;
  const int64_t step = file_full_at_step_.load(std::memory_order_relaxed);
  const int64_t mib = file_max_bytes_ >> 20;
  sink_.emit(LogEvent{"warning",
                      "the trace file '" + file_path_ + "' reached its limit of " +
                          (mib > 0 ? std::to_string(mib) + " MiB" : std::to_string(file_max_bytes_) + " bytes") +
                          (step >= 0 ? " at step " + std::to_string(step) : std::string()) +
                          ": later spans are left out of it (the Timeline and the step_spans events go on; "
                          "strata-run --trace-max-mib sets the limit, 0 removes it)",
                      time});
}

void StepTracer::collect(double time, int64_t completed) {
  std::vector<trace::Span> spans = recorder_.drain();
  if (spans.empty() && later_.empty()) return;
  summarize(time, completed, spans);
  if (unsent_.empty()) unsent_ = std::move(spans);
  else unsent_.insert(unsent_.end(), spans.begin(), spans.end());
}

void StepTracer::send() {
  if (unsent_.empty()) return;
  if (listener_) listener_(unsent_);
  if (file_thread_.joinable()) {
    {
      std::lock_guard lock(file_mutex_);
      // A file thread that failed takes nothing more; close() reports it.
      // Handed over whole when the thread has taken the last batch (the usual case).
      if (!file_error_ && file_queue_.empty()) file_queue_ = std::move(unsent_);
      else if (!file_error_) file_queue_.insert(file_queue_.end(), unsent_.begin(), unsent_.end());
    }
    file_cv_.notify_one();
  }
  unsent_.clear();
}

void StepTracer::summarize(double time, int64_t completed, const std::vector<trace::Span>& spans) {
  // The usual case, every span of completed steps and none held back: summarised where they lie.
  const bool all_done = later_.empty() &&
                        std::all_of(spans.begin(), spans.end(), [&](const trace::Span& s) { return s.step <= completed; });
  std::vector<trace::Span> done, later;
  if (!all_done) {
    for (const std::vector<trace::Span>* from : {static_cast<const std::vector<trace::Span>*>(&later_), &spans})
      for (const trace::Span& s : *from) (s.step <= completed ? done : later).push_back(s);
    later_ = std::move(later);
  }
  for (const trace::StepBreakdown& b : trace::summarize_steps(all_done ? spans : done)) {
    StepSpansEvent e;
    e.step = b.step;
    e.time = time;
    e.comm_ms = ms(b.comm_us);
    e.comm_hidden_ms = ms(b.comm_hidden_us);
    if (b.slowest >= 0) e.slowest = trace::lane_name(b.lanes[static_cast<size_t>(b.slowest)].lane);
    for (const trace::LaneBreakdown& l : b.lanes) {
      e.lanes.push_back(trace::lane_name(l.lane));
      e.step_ms.push_back(ms(l.step_us));
    }
    // Only the kinds that occurred, the step frame apart (it is step_ms).
    for (int k = 1; k < trace::kSpanKinds; ++k) {
      std::vector<double> per_lane;
      bool any = false;
      for (const trace::LaneBreakdown& l : b.lanes) {
        per_lane.push_back(ms(l.kind_us[static_cast<size_t>(k)]));
        any = any || per_lane.back() > 0;
      }
      if (!any) continue;
      e.kinds.emplace_back(trace::span_kind_name(static_cast<trace::SpanKind>(k)));
      e.kind_ms.push_back(std::move(per_lane));
    }
    sink_.emit(e);
  }
}

void StepTracer::close(double time) {
  collect(time, std::numeric_limits<int64_t>::max());
  send();
  if (recorder_.dropped() > 0)
    sink_.emit(LogEvent{"warning",
                        "the step timeline lost " + std::to_string(recorder_.dropped()) +
                            " spans (recorded faster than they were collected, or device marks that could not be read)",
                        time});
  stop_file();
  warn_if_file_full(time);  // the last spans may have filled it
}

double clock_offset_to_rank0_us(Cluster& cluster) {
  if (cluster.size() <= 1) return 0;
  std::vector<double> offsets;
  for (int round = 0; round < 5; ++round) {
    cluster.all_gather({0.0});  // everyone leaves this together
    const double mine = trace::TraceRecorder::now_us();
    offsets.push_back(cluster.all_gather({mine}).front() - mine);
  }
  std::nth_element(offsets.begin(), offsets.begin() + 2, offsets.end());
  return offsets[2];
}

std::string rank_trace_file(const std::string& file, int rank, int size) {
  if (size <= 1) return file;
  const auto slash = file.find_last_of('/');
  const auto dot = file.find_last_of('.');
  const std::string tag = ".rank" + std::to_string(rank);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return file + tag;
  return file.substr(0, dot) + tag + file.substr(dot);
}

}  // namespace strata
