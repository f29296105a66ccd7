#pragma once
#include <cstddef>
#include <mutex>
#include <vector>

#include "train/Events.h"

namespace strata::ui {

// The training thread's side of the engine bridge (docs/architecture.md §4). emit() only
// appends under a short lock, so training never waits on the UI; the UI
// thread swaps the whole buffer out on its timer. Qt-free on purpose: the
// training thread must not touch any QObject.
class EventQueue final : public EventSink {
public:
  void emit(const Event& event) override;
  // Everything queued since the last call, oldest first.
  std::vector<Event> take();
  size_t peak_size() const;

private:
  mutable std::mutex mutex_;
  std::vector<Event> pending_;
  size_t peak_ = 0;
};

}  // namespace strata::ui
