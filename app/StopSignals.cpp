#include "StopSignals.h"

#include <pthread.h>

#include <csignal>
#include <ctime>
#include <utility>

namespace strata {

namespace {
// The signal's default action, taken now: unblocked in this thread alone,
// raised at it.
[[noreturn]] void die_of(int sig) {
  std::signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  raise(sig);
  std::_Exit(128 + sig);  // not reached: the default actions of SIGINT and SIGTERM end the process
}
}  // namespace

StopSignals::StopSignals() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
  waiter_ = std::jthread([this](std::stop_token stop) { wait(stop); });
}

StopSignals::~StopSignals() {
  waiter_.request_stop();
  waiter_.join();
}

void StopSignals::arm(std::function<void()> on_stop) {
  {
    std::lock_guard lock(mutex_);
    on_stop_ = std::move(on_stop);
  }
  // Inherited as ignored (a background job's SIGINT), they would be
  // discarded, never waited for: a stop is what they mean from now on.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

void StopSignals::wait(std::stop_token stop) {
  sigset_t waiting = signals_;
  const timespec tick{0, 50'000'000};  // how soon the thread notices it may end
  bool stopping = false;
  while (!stop.stop_requested()) {
    const int sig = sigtimedwait(&waiting, nullptr, &tick);
    if (sig <= 0) continue;
    if (stopping) continue;  // a repeated SIGTERM: the stop is under way
    {
      // Called under the lock: arm() (disarming) waits for it, so what it
      // refers to is still there.
      std::lock_guard lock(mutex_);
      if (!on_stop_) die_of(sig);
      on_stop_();
    }
    stopping = true;
    // A second Ctrl-C ends the process: SIGINT is no longer waited for but
    // delivered, to this thread alone, with its default action.
    sigdelset(&waiting, SIGINT);
    sigset_t interrupt;
    sigemptyset(&interrupt);
    sigaddset(&interrupt, SIGINT);
    pthread_sigmask(SIG_UNBLOCK, &interrupt, nullptr);
  }
}

}  // namespace strata
