#pragma once
// Records spans from many threads at negligible cost: each thread appends to
// its own buffer (registered once per thread and recorder, then no lock),
// one consumer drains them between steps or from a timer.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "trace/Span.h"

namespace strata::trace {

class TraceRecorder {
public:
  // capacity: spans a thread's buffer holds before the consumer drains it;
  // more are counted in dropped() and lost.
  explicit TraceRecorder(size_t capacity_per_thread = 1 << 16);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // Any thread. Lock-free after the thread's first call on this recorder.
  void record(const Span& span);
  // One consumer thread at a time: every span recorded since the last drain,
  // ordered by start time.
  std::vector<Span> drain();
  int64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // Spans lost before they reached the recorder (a replayed graph's device
  // marks that could not be read), counted with the dropped ones.
  void count_lost(int64_t n) { dropped_.fetch_add(n, std::memory_order_relaxed); }

  // Now, in the spans' unit (microseconds on the monotonic clock).
  static double now_us();

private:
  struct ThreadBuffer;
  ThreadBuffer& buffer_for_this_thread();

  const uint64_t id_;  // never reused, so a thread's cache cannot mistake a new recorder for a dead one
  const size_t capacity_;
  std::mutex registry_mutex_;  // taken when a thread registers and by drain(), never by record()
  std::vector<std::unique_ptr<ThreadBuffer>> buffers_;
  std::atomic<int64_t> dropped_{0};
};

// Records [construction, destruction) as one span; nothing when the recorder is null.
class ScopedSpan {
public:
  ScopedSpan(TraceRecorder* recorder, SpanKind kind, Lane lane, int64_t step, int64_t bytes = 0)
      : recorder_(recorder), span_{kind, lane, step, recorder ? TraceRecorder::now_us() : 0.0, 0.0, bytes} {}
  ~ScopedSpan() {
    if (!recorder_) return;
    span_.duration_us = TraceRecorder::now_us() - span_.start_us;
    recorder_->record(span_);
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;
  // For spans whose bytes are known only at their end.
  void set_bytes(int64_t bytes) { span_.bytes = bytes; }

private:
  TraceRecorder* recorder_;
  Span span_;
};

}  // namespace strata::trace
