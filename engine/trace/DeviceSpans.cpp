#include "trace/DeviceSpans.h"

#include <algorithm>

#include "trace/TraceRecorder.h"

namespace strata::trace {

DeviceSpans::Scoped::Scoped(DeviceSpans* spans, const Device& device, SpanKind kind, Lane lane, int64_t step, int64_t bytes) {
  if (!spans || device.is_host()) return;
  EventPtr begin = device_memory(device).record_timing_mark();
  if (!begin) return;
  spans_ = spans;
  pending_ = std::make_shared<Pending>(Pending{device, Span{kind, lane, step, 0, 0, bytes}, std::move(begin), nullptr});
  std::lock_guard lock(spans_->mutex_);
  spans_->pending_.push_back(pending_);
  ++spans_->opened_;
}

DeviceSpans::Scoped::~Scoped() {
  if (!spans_) return;
  // Never throws: a failure to mark only loses the span.
  EventPtr end;
  try {
    end = device_memory(pending_->device).record_timing_mark();
  } catch (...) {
  }
  std::lock_guard lock(spans_->mutex_);
  pending_->end = std::move(end);
  pending_->closed = true;
}

namespace {
thread_local DeviceSpans::Context t_context;
}

DeviceSpans::ScopedContext::ScopedContext(Context context) : previous_(t_context) { t_context = context; }
DeviceSpans::ScopedContext::~ScopedContext() { t_context = previous_; }
DeviceSpans::Context DeviceSpans::current() { return t_context; }

void DeviceSpans::add(const Device& device, const Span& span, EventPtr begin, EventPtr end) {
  if (!begin || !end) return;
  auto p = std::make_shared<Pending>(Pending{device, span, std::move(begin), std::move(end)});
  std::lock_guard lock(mutex_);
  pending_.push_back(std::move(p));
  ++opened_;
}

size_t DeviceSpans::mark() const {
  std::lock_guard lock(mutex_);
  return opened_;
}

void DeviceSpans::keep_for_replays(size_t since_mark, int graph) {
  std::lock_guard lock(mutex_);
  // The newest `opened_ - since_mark` spans were opened during the capture
  // (pending_ keeps the order spans were opened in).
  const size_t captured = std::min(opened_ - since_mark, pending_.size());
  graphs_[graph & 1].assign(pending_.end() - static_cast<std::ptrdiff_t>(captured), pending_.end());
  pending_.resize(pending_.size() - captured);
}

bool DeviceSpans::resolve(const Pending& p, Span& out) {
  if (!p.end) return false;
  const auto t = device_memory(p.device).span_time_us(p.begin, p.end);
  if (!t) return false;
  out = p.span;
  out.start_us = t->start_us;
  out.duration_us = t->duration_us;
  return true;
}

void DeviceSpans::drain(TraceRecorder& recorder, int64_t replayed_step, int graph) {
  std::lock_guard lock(mutex_);
  Span s;
  int64_t lost = 0;
  std::erase_if(pending_, [&](const std::shared_ptr<Pending>& p) {
    if (resolve(*p, s)) {
      recorder.record(s);
      return true;
    }
    // Closed without an end mark: it would wait here for ever.
    if (p->closed && !p->end) {
      ++lost;
      return true;
    }
    return false;
  });
  // Read once, after the replay: one that cannot be read now never will be
  // for this step (the next replay records over it), so it is counted lost.
  if (replayed_step >= 0) {
    for (const auto& p : graphs_[graph & 1]) {
      if (resolve(*p, s)) {
        s.step = replayed_step;
        recorder.record(s);
      } else {
        ++lost;
      }
    }
  }
  if (lost > 0) recorder.count_lost(lost);
}

bool DeviceSpans::empty() const {
  std::lock_guard lock(mutex_);
  return pending_.empty() && graphs_[0].empty() && graphs_[1].empty();
}

}  // namespace strata::trace
