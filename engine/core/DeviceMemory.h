#pragma once
// What a non-host device's backend provides to tensors: its memory and the
// copies into, out of and within it. Declared in core so Tensor can allocate
// and move data without depending on backend/; the backend library installs
// the provider (BackendRegistry.cpp). Host (cpu) tensors never come here.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "core/Device.h"

namespace strata {

// What a device did, for the per-step discipline figures (allocations from
// the system, not cache hits; copies by direction; host synchronisations).
struct DeviceCounters {
  std::atomic<int64_t> allocations{0}, allocated_bytes{0};
  std::atomic<int64_t> h2d{0}, h2d_bytes{0}, d2h{0}, d2h_bytes{0}, d2d{0}, d2d_bytes{0};
  std::atomic<int64_t> syncs{0};
  std::atomic<int64_t> branches{0};  // side branches begun (Backend::begin_branch)
  // The device operations (kernels, copies, fills) one replay of the graph
  // captured last runs: a small step's time is about their number.
  std::atomic<int64_t> graph_operations{0};
};

// A point in a device's stream of work (cudaEvent_t on CUDA). Null means
// "already complete" (host devices, whose work runs as it is called).
class DeviceEvent {
public:
  virtual ~DeviceEvent() = default;
};
using EventPtr = std::shared_ptr<DeviceEvent>;

// A recorded stretch of a device's stream (a CUDA graph), replayed as one launch.
class DeviceGraph {
public:
  virtual ~DeviceGraph() = default;
};
using GraphPtr = std::shared_ptr<DeviceGraph>;

class DeviceMemory {
public:
  virtual ~DeviceMemory() = default;
  // Device memory for `bytes`; throws naming the device when it runs out.
  // Freed blocks are cached and handed out again for the same size.
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* p, size_t bytes) = 0;
  // Copies are queued in stream order. copy_to_host's destination is valid
  // only after synchronize() (or waiting on a later event) on the host.
  virtual void copy_from_host(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  // Within this device, or from a peer device of the same kind.
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  // Sets n 32-bit words to `word` (a float's or an int's bits).
  virtual void fill32(void* dst, int64_t n, uint32_t word) = 0;
  // Blocks the host until every queued operation has finished.
  virtual void synchronize() = 0;
  // Marks the current end of the stream; another stream (or the host) can wait for it.
  virtual EventPtr record_event() = 0;
  // Later work on this stream waits for `event` (no host wait).
  virtual void wait_event(const EventPtr& event) = 0;
  // Blocks the host until the work queued before `event` has finished: its
  // copies to host memory are then valid, while the work queued after it
  // goes on (a step in flight while the host reads the one before). Throws,
  // as synchronize() does, when queued work failed. By default the whole
  // stream is waited for.
  virtual void wait_host(const EventPtr& /*event*/) { synchronize(); }
  // Timing marks, for the step timeline's device lanes: a point queued in
  // the stream that notes when the device reaches it; queued while
  // capturing, it becomes part of the graph and notes the time again at
  // every replay. span_time_us reads two once the work before them has
  // completed (after the step's synchronisation), in microseconds on the
  // host's monotonic clock (monotonic_seconds() * 1e6); nullopt before
  // then. Devices without marks return null and nullopt.
  virtual EventPtr record_timing_mark() { return nullptr; }
  // The span between two marks queued in this order on one stream: its
  // start and duration, nullopt until `end` is reached.
  struct MarkedSpan {
    double start_us = 0, duration_us = 0;
  };
  virtual std::optional<MarkedSpan> span_time_us(const EventPtr& /*begin*/, const EventPtr& /*end*/) { return std::nullopt; }
  // Step capture. Between begin_capture() and end_capture() the work queued
  // on this device is recorded, not run; replay() runs the recording again,
  // on the same memory, as often as asked. Memory allocated while capturing
  // belongs to the graph and must be freed before end_capture(); copies from
  // or to the host and synchronize() are errors while capturing (a replay
  // could not repeat them). Devices that cannot (the host) throw.
  virtual bool supports_capture() const { return false; }
  virtual void begin_capture();
  virtual GraphPtr end_capture();
  virtual void replay(const GraphPtr& graph);
  // Page-locks host memory this device copies to or from often (a parameter
  // server worker's gradient buffer): its copies then run as DMA, queued
  // without the host waiting. Unpin before freeing. No-op where it does not matter.
  virtual void pin_host_memory(void* /*p*/, size_t /*bytes*/) {}
  virtual void unpin_host_memory(void* /*p*/) {}
  DeviceCounters& counters() { return counters_; }

private:
  DeviceCounters counters_;
};

// The memory of a non-host device; throws bad_input when the build or the
// machine has no such device.
DeviceMemory& device_memory(const Device& device);
using DeviceMemoryProvider = DeviceMemory& (*)(const Device&);
// Installs `provider` and returns the one it replaces (tests stand in a
// device of their own, then put the backends' back).
DeviceMemoryProvider set_device_memory_provider(DeviceMemoryProvider provider);

}  // namespace strata
