#pragma once
#include <signal.h>

#include <functional>
#include <mutex>
#include <thread>

namespace strata {

// SIGINT and SIGTERM, taken by one thread of their own instead of a handler
// that interrupts whichever thread the kernel picks. Handled on a compute
// thread, a signal lands in the middle of its kernels: under `mpirun` a
// parameter-server worker sent SIGTERM while oneDNN's matrix products ran
// died about once in eight stops with a corrupted heap (never without the
// signal). So the constructor blocks both signals in the calling thread,
// and so in every thread started after it (MPI's, the replicas', oneDNN's);
// construct it before any other thread exists. Until arm(), a signal ends
// the process as its default action does (as if nothing were installed);
// once armed, the first calls `on_stop` on the waiting thread and a second
// SIGINT ends the process at once.
class StopSignals {
public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  void arm(std::function<void()> on_stop);

private:
  void wait(std::stop_token stop);

  sigset_t signals_;
  std::mutex mutex_;
  std::function<void()> on_stop_;  // empty until armed
  std::jthread waiter_;            // last: it uses the members above
};

}  // namespace strata
