#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace strata {

// A fixed set of worker threads for data-parallel kernels. parallel_for splits
// [0, n) into at most size() contiguous ranges; the calling thread runs the
// first range itself. The split depends only on n and the thread count, so
// results are reproducible for a fixed thread count. Any thread may call
// parallel_for: callers take turns (one job at a time), and a call made from
// inside a job runs inline on the calling thread.
class ThreadPool {
public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // grain: the least work per range worth a thread hand-off.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex submit_;  // held by the caller whose job the workers run
  std::mutex mutex_;   // guards job_ and ranges_; the condition variables' sleepers
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  std::vector<std::pair<int64_t, int64_t>> ranges_;
  // Atomic so that workers and the caller can wait for them by spinning a
  // few tens of microseconds before sleeping on the condition variables
  // (written under mutex_ all the same, so a sleeper's predicate is exact).
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace strata
