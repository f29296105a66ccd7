#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace strata {

// A reusable barrier for replica threads that can be aborted: when one
// replica fails, the others waiting in a collective wake with an error
// instead of hanging forever. Waiters spin briefly before sleeping: replicas
// usually arrive within microseconds of each other, and a futex wake-up costs
// a scheduler slice when the machine is busy.
class Barrier {
public:
  explicit Barrier(int parties) : parties_(parties) {}
  // Throws Error(Aborted) if abort() was called.
  void arrive_and_wait();
  void abort();
  void reset();
  // While alive, the calling thread adds the seconds it waits in any
  // barrier to *seconds: the step timeline's wait for the other replicas.
  // Given null (tracing off), a barrier reads no clock.
  class CountWaits {
  public:
    explicit CountWaits(double* seconds);
    ~CountWaits();
    CountWaits(const CountWaits&) = delete;
    CountWaits& operator=(const CountWaits&) = delete;

  private:
    double* previous_;
  };

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int parties_;
  std::atomic<int> waiting_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> aborted_{false};
};

}  // namespace strata
