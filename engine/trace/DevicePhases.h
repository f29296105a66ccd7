#pragma once
// A replica's step on its device lane: the step's frame and its phases
// (forward, backward, optimizer), each between two timing marks. Inside a
// captured step graph a phase's end mark is also the next phase's start:
// nothing runs between them there, and each mark is a node of the graph
// that costs the device time on a short step. Op by op each phase gets its
// own start mark, queued once its host span has opened, so a device left
// waiting for the host shows as a gap between phases, not inside one.
#include <cstdint>

#include "core/Device.h"
#include "core/DeviceMemory.h"
#include "trace/DeviceSpans.h"
#include "trace/Span.h"

namespace strata::trace {

class DevicePhases {
public:
  // Marks the frame's start now; nothing at all when `spans` is null or the
  // device has no marks (the host). `shared`: one mark between phases.
  DevicePhases(DeviceSpans* spans, const Device& device, Lane lane, int64_t step, bool shared);
  // A phase starts (after its host span opened). `after_other_work`: work
  // outside the phases was queued since the last one ended (the gradients'
  // reduction), so even a shared start needs its own mark.
  void begin(bool after_other_work = false);
  // The phase begun last ends, recorded as `kind`.
  void end(SpanKind kind);
  // The frame ends: the step's span on the device lane.
  void finish();

private:
  EventPtr mark() const;
  void add(SpanKind kind, const EventPtr& begin, const EventPtr& end) const;

  DeviceSpans* spans_;
  Device device_;
  Lane lane_;
  int64_t step_;
  bool shared_;
  EventPtr frame_begin_, phase_begin_, last_end_;
};

}  // namespace strata::trace
