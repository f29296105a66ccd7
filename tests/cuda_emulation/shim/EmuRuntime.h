#pragma once
// The few CUDA runtime calls the kernel files make (CudaKernels.cu,
// CudaCheck.h), emulated: EmuCuda.h renames the calls to these, so the
// emulated kernels never link libcudart (there may be no GPU, and the real
// runtime would try to start one). Their signatures follow the real ones.
#include <cuda_runtime_api.h>

#include <cstddef>

namespace emu {

cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
cudaError_t cudaGetDevice(int* device);
const char* cudaGetErrorString(cudaError_t e);
const char* cudaGetErrorName(cudaError_t e);
// Host memory stands in for device memory: a copy of any kind is a memcpy.
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s);
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t s);
// Every kernel "has an image" for the emulated device.
template <typename F>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, F*) {
  *attributes = {};
  return cudaSuccess;
}

// A launch's configuration error, for the next cudaGetLastError.
void set_last_error(cudaError_t e);

}  // namespace emu
