#include "core/ThreadPool.h"

#include <algorithm>

#include "core/Denormals.h"

namespace strata {

namespace {
// The pool whose job this thread is running (as its caller or as a worker).
thread_local const ThreadPool* t_running = nullptr;
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
    pending_ = static_cast<int>(parts) - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  fn(ranges[0].first, ranges[0].second);
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  enable_flush_denormals();
  t_running = this;
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock lock(mutex_);
    start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    if (index >= static_cast<int>(ranges_.size())) continue;
    auto range = ranges_[static_cast<size_t>(index)];
    auto* job = job_;
    lock.unlock();
    (*job)(range.first, range.second);
    lock.lock();
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

}  // namespace strata
