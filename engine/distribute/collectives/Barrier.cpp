#include "distribute/collectives/Barrier.h"

#include "core/Clock.h"
#include "core/Error.h"
#include "core/SpinWait.h"

namespace strata {

namespace {
thread_local double* t_wait_seconds = nullptr;

// Adds the time from construction to destruction to the thread's wait
// counter, when it has one.
class WaitClock {
public:
  WaitClock() : start_(t_wait_seconds ? monotonic_seconds() : 0.0) {}
  ~WaitClock() {
    if (t_wait_seconds) *t_wait_seconds += monotonic_seconds() - start_;
  }
  WaitClock(const WaitClock&) = delete;
  WaitClock& operator=(const WaitClock&) = delete;

private:
  double start_;
};
}  // namespace

Barrier::CountWaits::CountWaits(double* seconds) : previous_(t_wait_seconds) { t_wait_seconds = seconds; }
Barrier::CountWaits::~CountWaits() { t_wait_seconds = previous_; }

void Barrier::arrive_and_wait() {
  const WaitClock clock;
  if (aborted_.load(std::memory_order_acquire)) throw Error(ErrorKind::Aborted, "collective aborted: another replica failed");
  const uint64_t gen = generation_.load(std::memory_order_acquire);
  if (waiting_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
    // Reset before releasing: nobody arrives for the next round until the
    // generation moves.
    waiting_.store(0, std::memory_order_relaxed);
    {
      std::lock_guard lock(mutex_);
      generation_.fetch_add(1, std::memory_order_acq_rel);
    }
    cv_.notify_all();
    return;
  }
  spin_while([&] { return generation_.load(std::memory_order_acquire) == gen && !aborted_.load(std::memory_order_acquire); });
  if (generation_.load(std::memory_order_acquire) != gen) return;
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != gen || aborted_.load(); });
  if (generation_.load(std::memory_order_acquire) == gen)
    throw Error(ErrorKind::Aborted, "collective aborted: another replica failed");
}

void Barrier::abort() {
  {
    std::lock_guard lock(mutex_);
    aborted_ = true;
  }
  cv_.notify_all();
}

void Barrier::reset() {
  std::lock_guard lock(mutex_);
  aborted_ = false;
  waiting_ = 0;
  generation_.fetch_add(1);
}

}  // namespace strata
