#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "backend/cuda/CudaCheck.h"

namespace strata::cuda {

// Timing marks for a race of ways on the GPU (ConvolutionWays, cuDNN's
// graph engines): `n` events, all destroyed with the object, also when
// creating a later one fails.
class TimingEvents {
public:
  explicit TimingEvents(size_t n) : e_(n, nullptr) {
    for (cudaEvent_t& m : e_) {
      const cudaError_t made = cudaEventCreate(&m);
      if (made != cudaSuccess) {
        m = nullptr;
        destroy();
        STRATA_CUDA(made);
      }
    }
  }
  ~TimingEvents() { destroy(); }
  TimingEvents(const TimingEvents&) = delete;
  TimingEvents& operator=(const TimingEvents&) = delete;

  cudaEvent_t operator[](size_t i) const { return e_[i]; }

private:
  void destroy() {
    for (cudaEvent_t& m : e_)
      if (m) cudaEventDestroy(m), m = nullptr;
  }
  std::vector<cudaEvent_t> e_;
};

}  // namespace strata::cuda
