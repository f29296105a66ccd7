#include "backend/cuda/CudnnWorkspace.h"

#include <algorithm>
#include <cstdio>

#include "backend/cuda/ConvolutionWays.h"
#include "backend/cuda/CudaCheck.h"
#include "core/Error.h"

namespace strata::cuda {

CudnnWorkspace::~CudnnWorkspace() {
  if (buffer_) memory_.deallocate(buffer_, bytes_);
  for (auto [old, bytes] : retired_) memory_.deallocate(old, bytes);
}

void CudnnWorkspace::reserve(size_t bytes) {
  if (bytes <= bytes_) return;
  // Grown inside a capture, the workspace would be the graph's memory and
  // outlive it; the step's first, op-by-op run sizes it.
  if (capturing(stream_))
    throw runtime_error(device_ + ": the cuDNN workspace must grow to " + std::to_string(bytes) +
                        " bytes while the step is captured (a convolution shape the op-by-op step did not run)");
  // Allocated before the old buffer is retired: without room for the new
  // one, the workspace keeps what it had, and the shapes that fit it go on
  // using it (retired first, each such attempt lost a buffer until the end).
  void* fresh = memory_.allocate(bytes);
  // The old buffer is kept, not freed: a step graph captured earlier names
  // it (evaluation's larger batch grows it after the capture), and replaying
  // that graph must not touch freed memory.
  if (buffer_) retired_.emplace_back(buffer_, bytes_);
  buffer_ = fresh;
  bytes_ = bytes;
}

bool CudnnWorkspace::try_reserve(size_t bytes) {
  if (bytes <= bytes_) return true;
  // Inside a capture it cannot grow: the call takes the other ways, as the
  // op-by-op step's did (that step found no room for it either).
  if (capturing(stream_)) return false;
  // A size the device had no room for is tried again only after
  // retry_every_ calls, twice as many after each try that still finds no
  // room: each failed try synchronises the device and trims its pools
  // (CudaBackend::allocate), and every convolution asks several times (each
  // way it might offer), so a fixed period kept a device short of memory
  // synchronising a few times a step for the rest of the run.
  if (refused_bytes_ > 0 && bytes >= refused_bytes_ && ++calls_since_refusal_ < retry_every_) return false;
  try {
    reserve(bytes);
    refused_bytes_ = 0;
    retry_every_ = kRetryEvery;
    return true;
  } catch (const Error& e) {
    if (!is_device_memory_exhausted(e)) throw;
    if (convolution_log()) std::fprintf(stderr, "%s; cuDNN is not offered for this call\n", e.what());
    if (refused_bytes_ > 0) retry_every_ = std::min(retry_every_ * 2, kMostRetryEvery);
    if (refused_bytes_ == 0 || bytes < refused_bytes_) refused_bytes_ = bytes;
    calls_since_refusal_ = 0;
    return false;
  }
}

}  // namespace strata::cuda
