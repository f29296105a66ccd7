#include "backend/cuda/PinnedStaging.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "backend/cuda/CudaCheck.h"

namespace strata::cuda {

PinnedStaging::~PinnedStaging() {
  // At exit the runtime may be gone already: nothing here may throw.
  for (Slot& s : slots_) {
    if (s.done) cudaEventDestroy(s.done);
    if (s.host) cudaFreeHost(s.host);
  }
}

void PinnedStaging::copy_to_device(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes > kMaxBytes) {
    // From pageable memory the driver has taken the bytes when the call
    // returns. From page-locked memory (registered by another library, an
    // MPI's receive buffers) the copy runs later, while the caller may free
    // `src` at once: then it is waited for.
    cudaPointerAttributes where{};
    const bool page_locked = cudaPointerGetAttributes(&where, src) == cudaSuccess && where.type == cudaMemoryTypeHost;
    cudaGetLastError();
    STRATA_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
    if (page_locked) STRATA_CUDA(cudaStreamSynchronize(stream));
    return;
  }
  std::lock_guard lock(mutex_);
  Slot& s = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  if (s.done) STRATA_CUDA(cudaEventSynchronize(s.done));  // its previous transfer has left the buffer
  else STRATA_CUDA(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
  if (s.bytes < bytes) {
    if (s.host) STRATA_CUDA(cudaFreeHost(s.host));
    // Until the new buffer is there the slot has none: a failed allocation
    // must not leave a size that lets the next copy write through null.
    s.host = nullptr;
    s.bytes = 0;
    // Rounded up so batches of slowly growing size do not reallocate each time.
    const size_t size = std::bit_ceil(std::max(bytes, size_t{1} << 20));
    STRATA_CUDA(cudaHostAlloc(&s.host, size, cudaHostAllocDefault));
    s.bytes = size;
  }
  std::memcpy(s.host, src, bytes);
  STRATA_CUDA(cudaMemcpyAsync(dst, s.host, bytes, cudaMemcpyHostToDevice, stream));
  STRATA_CUDA(cudaEventRecord(s.done, stream));
}

}  // namespace strata::cuda
