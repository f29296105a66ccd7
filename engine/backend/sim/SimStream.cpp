#include "backend/sim/SimStream.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "core/Clock.h"
#include "core/Denormals.h"
#include "core/Error.h"

namespace strata {

namespace {
// The replay the stream's thread is running (0: none), and the last one queued.
thread_local uint64_t t_replay = 0;
std::atomic<uint64_t> g_replays{0};

class SimEvent final : public DeviceEvent {
public:
  SimEvent(uint64_t copies_before, bool captured) : copies_before(copies_before), captured(captured) {}
  const uint64_t copies_before;  // copies to the host queued before this event
  // Recorded while the stream was captured: as on CUDA (cudaErrorCapturedEvent),
  // only the same capture may wait for it; the host and later work may not.
  // Every replay records it again, and a wait in a replay is for that
  // replay's record (the streams of one replay share its number): a record
  // left over from the previous replay must not let the next one through.
  const bool captured;
  void signal() {
    {
      std::lock_guard lock(mutex_);
      signaled_ = std::max(signaled_, captured ? t_replay : 1);
    }
    cv_.notify_all();
  }
  void wait() {
    const uint64_t want = captured ? t_replay : 1;
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return signaled_ >= want; });
  }

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t signaled_ = 0;  // the replay that last recorded it (uncaptured: 1 once recorded)
};

class SimTimingMark final : public DeviceEvent {
public:
  std::atomic<double> time_us{-1.0};  // the last time the stream ran it (each replay notes it again)
  // The replay whose run of it is awaited (0: an eager mark): a run in
  // another replay leaves it pending.
  std::atomic<uint64_t> awaited{0};
};
}  // namespace

SimStream::SimStream(std::string name) : name_(std::move(name)), thread_([this] { loop(); }) {}

SimStream::~SimStream() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

void SimStream::enqueue(std::function<void()> op, EventPtr mark) {
  {
    std::lock_guard lock(mutex_);
    if (capturing_) {
      recording_.ops.push_back(std::move(op));
      if (mark) recording_.marks.push_back(std::move(mark));
      return;
    }
    queue_.push_back(std::move(op));
  }
  work_cv_.notify_one();
}

void SimStream::begin_capture() {
  std::lock_guard lock(mutex_);
  if (capturing_) throw runtime_error(name_ + ": begin_capture while a capture is already under way");
  capturing_ = true;
  recording_ = Recording{};
}

SimStream::Recording SimStream::end_capture() {
  std::lock_guard lock(mutex_);
  if (!capturing_) throw runtime_error(name_ + ": end_capture without begin_capture");
  capturing_ = false;
  return std::move(recording_);
}

bool SimStream::capturing() {
  std::lock_guard lock(mutex_);
  return capturing_;
}

uint64_t SimStream::next_replay() { return ++g_replays; }

void SimStream::replay(std::shared_ptr<const Recording> ops, uint64_t replay) {
  for (const EventPtr& m : ops->marks) {
    auto& mark = static_cast<SimTimingMark&>(*m);
    mark.awaited.store(replay, std::memory_order_relaxed);
    mark.time_us.store(-1.0, std::memory_order_release);
  }
  enqueue([this, ops, replay] {
    struct Replaying {
      explicit Replaying(uint64_t n) { t_replay = n; }
      ~Replaying() { t_replay = 0; }
    } replaying(replay);
    // As the stream runs queued work: a failing operation's error is the
    // next synchronize()'s, and the operations after it still run. A part
    // that stopped at the failure would leave its events unrecorded, and the
    // other stream's part of the replay waiting for them for ever.
    for (const auto& op : ops->ops) try {
        op();
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
  });
}

void SimStream::enqueue_to_host(void* host_dst, const void* src_view, size_t bytes) {
  uint64_t order = 0;
  {
    std::lock_guard lock(mutex_);
    if (capturing_) throw runtime_error(name_ + ": a copy to the host cannot be part of a captured step");
    order = ++to_host_queued_;
  }
  std::memset(host_dst, 0xff, bytes);
  enqueue([this, host_dst, src_view, bytes, order] {
    Landing l{host_dst, std::vector<char>(static_cast<const char*>(src_view), static_cast<const char*>(src_view) + bytes),
              order};
    std::lock_guard lock(mutex_);
    landed_.push_back(std::move(l));
  });
}

void SimStream::synchronize() {
  std::exception_ptr error;
  {
    std::unique_lock lock(mutex_);
    if (capturing_) throw runtime_error(name_ + ": synchronize() while a step is being captured");
    idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
    // Copies land under the lock: replicas sharing this device each
    // synchronise, and one may land another's copy; the other's own
    // synchronize() must not return before that copy is complete (found by
    // ThreadSanitizer with two replicas on one sim device).
    land(UINT64_MAX);
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

void SimStream::land(uint64_t up_to) {
  std::erase_if(landed_, [&](const Landing& l) {
    if (l.order > up_to) return false;
    std::memcpy(l.dst, l.bytes.data(), l.bytes.size());
    return true;
  });
}

EventPtr SimStream::record() {
  std::shared_ptr<SimEvent> event;
  {
    std::lock_guard lock(mutex_);
    event = std::make_shared<SimEvent>(to_host_queued_, capturing_);
  }
  enqueue([event] { event->signal(); });
  return event;
}

void SimStream::wait_host(const EventPtr& event) {
  auto e = std::dynamic_pointer_cast<SimEvent>(event);
  if (!e) return;  // a host event: already complete
  if (capturing()) throw runtime_error(name_ + ": the host waited for the device while a step is being captured");
  if (e->captured) throw runtime_error(name_ + ": the host waited for an event recorded while a step was captured");
  e->wait();
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    land(e->copies_before);
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

EventPtr SimStream::record_timing_mark() {
  auto mark = std::make_shared<SimTimingMark>();
  enqueue(
      [mark] {
        if (mark->awaited.load(std::memory_order_relaxed) == t_replay)
          mark->time_us.store(monotonic_seconds() * 1e6, std::memory_order_release);
      },
      mark);
  return mark;
}

std::optional<double> SimStream::mark_time_us(const EventPtr& mark) {
  auto* m = dynamic_cast<const SimTimingMark*>(mark.get());
  if (!m) return std::nullopt;
  const double t = m->time_us.load(std::memory_order_acquire);
  if (t < 0) return std::nullopt;
  return t;
}

void SimStream::wait(const EventPtr& event) {
  auto e = std::dynamic_pointer_cast<SimEvent>(event);
  if (!e) return;  // a host event: already complete
  const bool now = capturing();
  if (e->captured && !now)
    throw runtime_error(name_ + ": work outside a captured step waited for an event recorded while it was captured");
  // As on CUDA (cudaErrorStreamCaptureIsolation): a captured step may wait
  // only for events recorded in the same capture.
  if (now && !e->captured) throw runtime_error(name_ + ": a captured step waited for an event recorded before the capture");
  enqueue([e] { e->wait(); });
}

void SimStream::loop() {
  enable_flush_denormals();
  for (;;) {
    std::function<void()> op;
    {
      std::unique_lock lock(mutex_);
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      op = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    try {
      op();
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      busy_ = false;
      if (queue_.empty()) idle_cv_.notify_all();
    }
  }
}

}  // namespace strata
