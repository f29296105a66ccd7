#pragma once
// The part of CUB's BlockReduce the kernels use (CudaKernels.cu), with
// CUB's contract: every thread of a block of exactly kThreads calls it, the
// result is thread 0's only, and TempStorage may be reused only after a
// __syncthreads (the scheduler's alternating order turns a missing one
// into a wrong sum). Thread 0 combines the values in thread order.
#include "EmuCuda.h"

namespace cub {

template <typename T, int kThreads>
class BlockReduce {
public:
  struct TempStorage {
    T value[kThreads];
  };
  explicit BlockReduce(TempStorage& temp) : temp_(temp) {}

  T Sum(T x) {
    return Reduce(x, [](const T& a, const T& b) { return a + b; });
  }

  template <typename Op>
  T Reduce(T x, Op op) {
    const int self = emu::linear_thread();
    if (emu::block_threads() != kThreads) {
      emu::report("cub::BlockReduce in a block of another size than its own");
      return x;
    }
    temp_.value[self] = x;
    __syncthreads();
    if (self != 0) return x;
    T total = temp_.value[0];
    for (int i = 1; i < kThreads; ++i) total = op(total, temp_.value[i]);
    return total;
  }

private:
  TempStorage& temp_;
};

}  // namespace cub
