#pragma once
// Turns a failed CUDA runtime or cuBLAS call into strata::Error naming the
// call, the source place and the library's own message, so a user's report
// says which operation failed where ("gpu:0: cudaMemcpyAsync failed at
// CudaBackend.cpp:120: an illegal memory access was encountered").
#include <cuda_runtime_api.h>

#include <string>

#include "core/Error.h"

namespace strata::cuda {

// Whether `stream` is being captured into a graph; a failed query counts as
// not (the caller's next checked call reports the stream's error).
inline bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone;
}

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  // Clear the thread's last error, or the next launch check would report
  // this failure again under the later kernel's name (when the caller
  // catches and carries on, as a failed capture does).
  cudaGetLastError();
  std::string where = file;
  if (auto slash = where.rfind('/'); slash != std::string::npos) where = where.substr(slash + 1);
  // Every call runs on the calling thread's current device (the backend
  // sets it first), so that is the GPU to name: with replicas on several
  // GPUs a message without it does not say which one failed.
  int device = -1;
  const std::string gpu = cudaGetDevice(&device) == cudaSuccess ? "gpu:" + std::to_string(device) + ": " : "";
  cudaGetLastError();
  throw runtime_error(gpu + call + " failed at " + where + ":" + std::to_string(line) + ": " + cudaGetErrorString(e) + " (" +
                      cudaGetErrorName(e) + ")");
}

}  // namespace strata::cuda

#define STRATA_CUDA(call)                                                              \
  do {                                                                                 \
    cudaError_t strata_cuda_err_ = (call);                                             \
    if (strata_cuda_err_ != cudaSuccess)                                               \
      ::strata::cuda::throw_cuda(strata_cuda_err_, #call, __FILE__, __LINE__);         \
  } while (0)

// After a kernel launch: a bad configuration shows up here, not at the next sync.
// `kernel` is a string literal naming it. cudaGetLastError also clears the
// error (a peek would leave it there, and every later launch on the thread
// would report it again).
#define STRATA_CUDA_LAUNCHED(kernel)                                                         \
  do {                                                                                       \
    cudaError_t strata_cuda_err_ = cudaGetLastError();                                       \
    if (strata_cuda_err_ != cudaSuccess)                                                     \
      ::strata::cuda::throw_cuda(strata_cuda_err_, "launch of " kernel, __FILE__, __LINE__); \
  } while (0)
