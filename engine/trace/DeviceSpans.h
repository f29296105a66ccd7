#pragma once
// What a replica's device did, as opposed to when its host thread queued the
// work: on an accelerator the host runs ahead, so its spans show the queueing
// and these show the execution. Each span is a pair of timing marks in the
// device's stream (DeviceMemory::record_timing_mark), read once the step's
// work has completed. On host devices there is nothing to mark: their host
// spans are the execution.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/Device.h"
#include "core/DeviceMemory.h"
#include "trace/Span.h"

namespace strata::trace {

class TraceRecorder;

class DeviceSpans {
public:
  struct Pending;
  // Queues the start mark now and the end mark at destruction; nothing when
  // `spans` is null or the device has no marks (the host).
  class Scoped {
  public:
    Scoped(DeviceSpans* spans, const Device& device, SpanKind kind, Lane lane, int64_t step, int64_t bytes = 0);
    ~Scoped();
    Scoped(const Scoped&) = delete;
    Scoped& operator=(const Scoped&) = delete;

  private:
    DeviceSpans* spans_ = nullptr;
    std::shared_ptr<Pending> pending_;
  };

  // What the replica calling a collective is recording, for collectives that
  // run on a stream of their own (NCCL's): set by the replica around the
  // call (ReplicaContext), read by the implementation on the same thread.
  struct Context {
    DeviceSpans* spans = nullptr;
    int replica = 0;
    int64_t step = -1;
  };
  class ScopedContext {
  public:
    explicit ScopedContext(Context context);
    ~ScopedContext();
    ScopedContext(const ScopedContext&) = delete;
    ScopedContext& operator=(const ScopedContext&) = delete;

  private:
    Context previous_;
  };
  // The calling thread's context (spans null when it records nothing).
  static Context current();
  // A span whose two marks the caller queued itself (on a stream of its
  // own, or shared with the spans beside it: DevicePhases).
  void add(const Device& device, const Span& span, EventPtr begin, EventPtr end);

  // Step graphs: the spans opened since `mark()` were captured into graph
  // `graph` (0 or 1: StepGraph alternates two when tracing); a replay notes
  // their marks again, and drain() records them for the replayed step.
  size_t mark() const;
  void keep_for_replays(size_t since_mark, int graph = 0);
  // Records every span whose two marks the devices have passed (the rest
  // stay until a later call) and counts the spans whose end mark failed as
  // lost. Graph `graph`'s spans are recorded for `replayed_step` when it is
  // >= 0 (that graph ran the step, and the step has completed).
  void drain(TraceRecorder& recorder, int64_t replayed_step = -1, int graph = 0);
  bool empty() const;

  struct Pending {
    Device device;
    Span span;
    EventPtr begin, end;  // end is null while the span is open, and after its mark failed
    bool closed = false;  // the span's scope has ended
  };

private:
  // The span of `p` when both marks have been reached.
  static bool resolve(const Pending& p, Span& out);

  mutable std::mutex mutex_;  // replicas mark from their own threads
  std::vector<std::shared_ptr<Pending>> pending_;
  std::vector<std::shared_ptr<Pending>> graphs_[2];
  size_t opened_ = 0;  // spans ever opened (mark())
};

// The device lane beside replica `replica`'s host lane.
inline Lane device_lane(int replica) { return Lane{LaneKind::Device, replica}; }

}  // namespace strata::trace
