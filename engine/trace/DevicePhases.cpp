#include "trace/DevicePhases.h"

namespace strata::trace {

DevicePhases::DevicePhases(DeviceSpans* spans, const Device& device, Lane lane, int64_t step, bool shared)
    : spans_(spans && !device.is_host() ? spans : nullptr), device_(device), lane_(lane), step_(step), shared_(shared) {
  frame_begin_ = last_end_ = mark();
}

EventPtr DevicePhases::mark() const { return spans_ ? device_memory(device_).record_timing_mark() : nullptr; }

void DevicePhases::add(SpanKind kind, const EventPtr& begin, const EventPtr& end) const {
  if (spans_ && begin && end) spans_->add(device_, Span{kind, lane_, step_, 0, 0, 0}, begin, end);
}

void DevicePhases::begin(bool after_other_work) { phase_begin_ = shared_ && !after_other_work ? last_end_ : mark(); }

void DevicePhases::end(SpanKind kind) {
  last_end_ = mark();
  add(kind, phase_begin_, last_end_);
}

void DevicePhases::finish() { add(SpanKind::Step, frame_begin_, mark()); }

}  // namespace strata::trace
