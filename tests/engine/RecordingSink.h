#pragma once
// An EventSink for tests: records every event and lets another thread wait
// for the n-th step.
#include <condition_variable>
#include <mutex>
#include <variant>
#include <vector>

#include "train/Events.h"

namespace strata {

// Records every event; lets another thread wait for the n-th step.
class RecordingSink final : public EventSink {
public:
  void emit(const Event& e) override {
    std::lock_guard lock(mutex_);
    events.push_back(e);
    if (std::holds_alternative<StepEvent>(e)) ++steps_;
    cv_.notify_all();
  }
  void wait_for_steps(int64_t n) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return steps_ >= n || finished(); });
  }
  template <typename T>
  std::vector<T> all() const {
    std::vector<T> out;
    for (auto& e : events)
      if (auto* p = std::get_if<T>(&e)) out.push_back(*p);
    return out;
  }
  std::vector<Event> events;

private:
  bool finished() const { return !events.empty() && std::holds_alternative<FinishedEvent>(events.back()); }
  std::mutex mutex_;
  std::condition_variable cv_;
  int64_t steps_ = 0;
};

}  // namespace strata
