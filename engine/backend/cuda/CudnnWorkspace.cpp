#include "backend/cuda/CudnnWorkspace.h"

#include <cstdio>

#include "backend/cuda/ConvolutionWays.h"
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
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream_, &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone)
    throw runtime_error(device_ + ": the cuDNN workspace must grow to " + std::to_string(bytes) +
                        " bytes while the step is captured (a convolution shape the op-by-op step did not run)");
  // The old buffer is kept, not freed: a step graph captured earlier names
  // it (evaluation's larger batch grows it after the capture), and replaying
  // that graph must not touch freed memory.
  if (buffer_) retired_.emplace_back(buffer_, bytes_);
  buffer_ = nullptr;
  bytes_ = 0;
  buffer_ = memory_.allocate(bytes);
  bytes_ = bytes;
}

bool CudnnWorkspace::try_reserve(size_t bytes) {
  try {
    reserve(bytes);
    return true;
  } catch (const Error& e) {
    if (!is_device_memory_exhausted(e)) throw;
    if (convolution_log()) std::fprintf(stderr, "%s; cuDNN is not offered for this call\n", e.what());
    return false;
  }
}

}  // namespace strata::cuda
