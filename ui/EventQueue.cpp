#include "EventQueue.h"

#include <algorithm>

namespace strata::ui {

void EventQueue::emit(const Event& event) {
  // Copy outside the lock so the critical section is a vector push only.
  Event copy = event;
  std::lock_guard lock(mutex_);
  pending_.push_back(std::move(copy));
  peak_ = std::max(peak_, pending_.size());
}

std::vector<Event> EventQueue::take() {
  std::vector<Event> out;
  {
    std::lock_guard lock(mutex_);
    out.swap(pending_);
  }
  return out;
}

size_t EventQueue::peak_size() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

}  // namespace strata::ui
