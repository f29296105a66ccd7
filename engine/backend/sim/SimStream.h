#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/DeviceMemory.h"

namespace strata {

// The in-order work queue of a simulated device, run by its own thread as a
// CUDA stream runs on the GPU. Two rules make host mistakes fail every time
// rather than by luck of timing:
//  - a copy to host memory lands there only when the host synchronises: until
//    then the destination holds a poison pattern (NaN floats), so a read that
//    skipped the synchronisation sees garbage, however fast the device was;
//  - a failing operation does not throw on the host thread that queued it
//    (it has returned long ago): the first error is rethrown by synchronize().
class SimStream {
public:
  explicit SimStream(std::string name);
  ~SimStream();
  SimStream(const SimStream&) = delete;
  SimStream& operator=(const SimStream&) = delete;

  // `mark`: the timing mark `op` records, kept with the recording while
  // capturing (Recording::marks).
  void enqueue(std::function<void()> op, EventPtr mark = nullptr);
  // Queues a copy of `bytes` from device memory (already a host view) into
  // host memory, which is poisoned now and written at the next synchronize().
  void enqueue_to_host(void* host_dst, const void* src_view, size_t bytes);
  void synchronize();
  EventPtr record();
  // The host waits for `event` (made by record()); the copies to the host
  // queued before it land, those queued after it stay poisoned.
  void wait_host(const EventPtr& event);
  void wait(const EventPtr& event);
  // DeviceMemory's timing marks: the stream's thread notes the time it runs them.
  EventPtr record_timing_mark();
  static std::optional<double> mark_time_us(const EventPtr& mark);

  // Capture, as cudaStreamBeginCapture: while it is on, enqueue() records
  // the operation instead of queueing it, and copies to the host and
  // synchronize() throw (a replay could not repeat them).
  struct Recording {
    std::vector<std::function<void()>> ops;
    // Its timing marks: queueing a replay makes them pending until the
    // stream reaches them in that replay, as CUDA's events recorded by a
    // graph are (a read in between gets nothing, never the last replay's time).
    std::vector<EventPtr> marks;
  };
  void begin_capture();
  Recording end_capture();
  bool capturing();
  // A replay's number, for every stream that runs a part of it (a step
  // that forked a side branch was recorded on two): its events and timing
  // marks are that replay's.
  static uint64_t next_replay();
  // Queues a recording's operations, in order, as one item.
  void replay(std::shared_ptr<const Recording> ops, uint64_t replay);

private:
  struct Landing {
    void* dst;
    std::vector<char> bytes;
    uint64_t order;  // the copy's place among the copies to the host
  };
  void loop();
  void land(uint64_t up_to);  // with mutex_ held

  std::string name_;
  std::mutex mutex_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<Landing> landed_;
  uint64_t to_host_queued_ = 0;  // copies to the host queued so far
  bool busy_ = false;
  bool stop_ = false;
  bool capturing_ = false;
  Recording recording_;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace strata
