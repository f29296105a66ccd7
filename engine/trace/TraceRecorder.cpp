#include "trace/TraceRecorder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <unordered_set>

namespace strata::trace {

// A single-producer/single-consumer ring. head and tail count spans ever
// written and read (never wrapped), so full is head - tail == capacity and no
// slot is wasted. The producer publishes a slot with its release store of
// head; the consumer hands slots back with its release store of tail, so the
// producer never overwrites a span the consumer is still copying.
struct TraceRecorder::ThreadBuffer {
  explicit ThreadBuffer(size_t capacity) : slots(capacity) {}
  std::vector<Span> slots;
  std::atomic<uint64_t> head{0};  // stored by the producing thread only
  std::atomic<uint64_t> tail{0};  // stored by the consumer (under registry_mutex_) only
  // Set (release) by the producing thread as it exits: its last spans are
  // then visible to whoever reads this with acquire, which lets drain() free
  // the buffer once empty and lets the next registering thread take it over
  // (threads such as the input pipeline's come and go every epoch).
  std::atomic<bool> orphaned{false};
};

namespace {

std::atomic<uint64_t> next_recorder_id{1};

// The ids of live recorders. An exiting thread must learn whether the
// recorders it cached are still alive before touching their buffers, and the
// recorder's destructor must not free them while it does; this lock orders
// the two. Never destroyed, so threads exiting during static destruction
// still find it.
struct LiveRecorders {
  std::mutex mutex;
  std::unordered_set<uint64_t> ids;
};
LiveRecorders& live_recorders() {
  static auto* live = new LiveRecorders;
  return *live;
}

}  // namespace

TraceRecorder::TraceRecorder(size_t capacity_per_thread)
    : id_(next_recorder_id.fetch_add(1, std::memory_order_relaxed)), capacity_(std::max<size_t>(1, capacity_per_thread)) {
  auto& live = live_recorders();
  std::lock_guard lock(live.mutex);
  live.ids.insert(id_);
}

TraceRecorder::~TraceRecorder() {
  // After this no exiting thread dereferences our buffers (it checks the id
  // under the same lock); the buffers go with buffers_ afterwards.
  auto& live = live_recorders();
  std::lock_guard lock(live.mutex);
  live.ids.erase(id_);
}

double TraceRecorder::now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TraceRecorder::ThreadBuffer& TraceRecorder::buffer_for_this_thread() {
  // Defined here, inside a member, so it may name the private ThreadBuffer.
  // Entries are keyed by recorder id, never by address: a recorder created
  // where a destroyed one lived has a new id, so it cannot be handed the dead
  // recorder's (freed) buffer.
  struct Cache {
    struct Entry {
      uint64_t recorder_id;
      ThreadBuffer* buffer;
    };
    std::vector<Entry> entries;
    ~Cache() {
      auto& live = live_recorders();
      std::lock_guard lock(live.mutex);
      for (const Entry& e : entries)
        if (live.ids.count(e.recorder_id)) e.buffer->orphaned.store(true, std::memory_order_release);
    }
  };
  thread_local Cache cache;

  for (const auto& e : cache.entries)
    if (e.recorder_id == id_) return *e.buffer;

  // First record() of this thread on this recorder: forget recorders that
  // died (their buffers are gone), then register.
  {
    auto& live = live_recorders();
    std::lock_guard lock(live.mutex);
    std::erase_if(cache.entries, [&](const Cache::Entry& e) { return !live.ids.count(e.recorder_id); });
  }
  std::lock_guard lock(registry_mutex_);
  ThreadBuffer* buffer = nullptr;
  for (auto& b : buffers_)
    if (b->orphaned.load(std::memory_order_acquire)) {
      b->orphaned.store(false, std::memory_order_relaxed);  // ours now; only registrants (under the lock) clear it
      buffer = b.get();
      break;
    }
  if (!buffer) {
    buffers_.push_back(std::make_unique<ThreadBuffer>(capacity_));
    buffer = buffers_.back().get();
  }
  cache.entries.push_back({id_, buffer});
  return *buffer;
}

void TraceRecorder::record(const Span& span) {
  ThreadBuffer& b = buffer_for_this_thread();
  const uint64_t head = b.head.load(std::memory_order_relaxed);
  if (head - b.tail.load(std::memory_order_acquire) >= capacity_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  b.slots[head % capacity_] = span;
  b.head.store(head + 1, std::memory_order_release);
}

std::vector<Span> TraceRecorder::drain() {
  std::vector<Span> out;
  std::lock_guard lock(registry_mutex_);
  std::erase_if(buffers_, [&](const std::unique_ptr<ThreadBuffer>& b) {
    // Read before head: if the producer had exited by now, the head read
    // below holds its last span and the buffer can go once emptied.
    const bool orphaned = b->orphaned.load(std::memory_order_acquire);
    const uint64_t tail = b->tail.load(std::memory_order_relaxed);
    const uint64_t head = b->head.load(std::memory_order_acquire);
    for (uint64_t i = tail; i < head; ++i) out.push_back(b->slots[i % capacity_]);
    b->tail.store(head, std::memory_order_release);
    return orphaned;
  });
  // Stable: spans with equal start times keep each thread's recording order.
  // A NaN start (a caller's bug) sorts last instead of breaking the ordering
  // the sort relies on.
  auto key = [](const Span& s) { return std::isnan(s.start_us) ? std::numeric_limits<double>::infinity() : s.start_us; };
  std::stable_sort(out.begin(), out.end(), [&](const Span& a, const Span& b) { return key(a) < key(b); });
  return out;
}

}  // namespace strata::trace
