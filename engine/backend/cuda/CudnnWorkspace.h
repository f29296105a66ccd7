#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/DeviceMemory.h"

namespace strata::cuda {

// The device memory a cuDNN way's kernels work in: one buffer for every
// shape, as large as the largest plan needs, grown on the first (op by op)
// step of a shape and never while a step is captured. Not locked: its
// owner's mutex guards it.
class CudnnWorkspace {
public:
  CudnnWorkspace(DeviceMemory& memory, std::string device, cudaStream_t stream)
      : memory_(memory), device_(std::move(device)), stream_(stream) {}
  ~CudnnWorkspace();
  CudnnWorkspace(const CudnnWorkspace&) = delete;
  CudnnWorkspace& operator=(const CudnnWorkspace&) = delete;

  // At least `bytes`; throws naming the device when that needs growth
  // inside a capture or the device has no memory for it.
  void reserve(size_t bytes);
  // reserve(), answering false where the device has no memory for it (or
  // it would grow inside a capture): a shape's first call then takes the
  // other ways (im2col over slices needs far less), rather than failing the
  // step; a later call may fit.
  bool try_reserve(size_t bytes);
  void* get() const { return buffer_; }
  size_t bytes() const { return bytes_; }

private:
  // A size the device had no room for is tried again after kRetryEvery
  // calls, then after twice as many each time it still does not fit, up to
  // kMostRetryEvery.
  static constexpr unsigned kRetryEvery = 64;
  static constexpr unsigned kMostRetryEvery = 1u << 14;
  DeviceMemory& memory_;
  std::string device_;
  cudaStream_t stream_;
  void* buffer_ = nullptr;
  size_t bytes_ = 0;
  std::vector<std::pair<void*, size_t>> retired_;  // outgrown buffers
  size_t refused_bytes_ = 0;                       // the smallest size the device last had no room for
  unsigned calls_since_refusal_ = 0;
  unsigned retry_every_ = kRetryEvery;
};

}  // namespace strata::cuda
