#include "distribute/Barrier.h"

#include "core/Error.h"

namespace strata {

void Barrier::arrive_and_wait() {
  std::unique_lock lock(mutex_);
  if (aborted_) throw Error(ErrorKind::Aborted, "collective aborted: another replica failed");
  const uint64_t gen = generation_;
  if (++waiting_ == parties_) {
    waiting_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != gen || aborted_; });
  if (generation_ == gen) throw Error(ErrorKind::Aborted, "collective aborted: another replica failed");
}

void Barrier::abort() {
  std::lock_guard lock(mutex_);
  aborted_ = true;
  cv_.notify_all();
}

void Barrier::reset() {
  std::lock_guard lock(mutex_);
  aborted_ = false;
  waiting_ = 0;
  ++generation_;
}

}  // namespace strata
