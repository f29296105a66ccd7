#include "core/ThreadPool.h"

#include <algorithm>
#include <chrono>

#include "core/Denormals.h"

namespace strata {

namespace {
// The pool whose job this thread is running (as its caller or as a worker).
thread_local const ThreadPool* t_running = nullptr;

// Waits up to kSpinMicroseconds for done() by spinning; true when it came.
// A condition variable's hand-off costs a sleeping thread tens of
// microseconds to wake (40 us for an empty two-way parallel_for on a 2-core
// cloud guest), more than a small kernel's whole range, and a kernel's ranges
// usually end within microseconds of one another, as the next job usually
// follows within microseconds: so both sides spin first, as OpenMP's workers
// do, and sleep only when the wait is long.
constexpr int kSpinMicroseconds = 50;
template <typename Done>
bool spin_until(Done&& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicroseconds);
  for (int i = 0;; ++i) {
    if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 63 && std::chrono::steady_clock::now() > until) return done();
  }
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int64_t parts = std::min<int64_t>(size(), std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
  if (parts <= 1) {
    fn(0, n);
    return;
  }
  // A job inside a job (a kernel calling a kernel) cannot wait for workers
  // that are busy running its parent: run it here, whole.
  if (t_running == this) {
    fn(0, n);
    return;
  }
  std::lock_guard turn(submit_);
  t_running = this;
  struct Clear {
    ~Clear() { t_running = nullptr; }
  } clear;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t p = 0; p < parts; ++p) ranges.emplace_back(n * p / parts, n * (p + 1) / parts);
  {
    std::lock_guard lock(mutex_);
    ranges_ = ranges;
    job_ = &fn;
    pending_.store(static_cast<int>(parts) - 1);
    generation_.fetch_add(1);
  }
  start_cv_.notify_all();
  fn(ranges[0].first, ranges[0].second);
  auto done = [&] { return pending_.load() == 0; };
  const bool spun = spin_until(done);
  std::unique_lock lock(mutex_);
  if (!spun) done_cv_.wait(lock, done);
  job_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  enable_flush_denormals();
  t_running = this;
  uint64_t seen = 0;
  auto started = [&] { return stop_.load() || generation_.load() != seen; };
  for (;;) {
    spin_until(started);
    std::unique_lock lock(mutex_);
    start_cv_.wait(lock, started);
    if (stop_) return;
    seen = generation_.load();
    if (index >= static_cast<int>(ranges_.size())) continue;
    auto range = ranges_[static_cast<size_t>(index)];
    auto* job = job_;
    lock.unlock();
    (*job)(range.first, range.second);
    // The last range's worker wakes a caller that went to sleep; under the
    // mutex, so a caller between its check and its sleep cannot miss it.
    if (pending_.fetch_sub(1) == 1) {
      lock.lock();
      done_cv_.notify_one();
    }
  }
}

}  // namespace strata
