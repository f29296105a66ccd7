// The emulated CUDA runtime calls of EmuRuntime.h.
#include "EmuRuntime.h"

#include <cstring>
#include <utility>

namespace emu {

namespace {
// Per OS thread, as the runtime keeps it.
thread_local cudaError_t last_error = cudaSuccess;
}  // namespace

void set_last_error(cudaError_t e) { last_error = e; }

cudaError_t cudaGetLastError() { return std::exchange(last_error, cudaSuccess); }
cudaError_t cudaPeekAtLastError() { return last_error; }

cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    default: return "cudaError (emulated)";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaErrorInvalidConfiguration ? "invalid configuration argument" : emu::cudaGetErrorName(e);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t) {
  if (bytes) std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t) {
  if (bytes) std::memset(dst, value, bytes);
  return cudaSuccess;
}

}  // namespace emu
