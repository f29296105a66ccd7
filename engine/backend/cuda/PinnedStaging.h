#pragma once
// Host-to-device copies through page-locked (pinned) buffers. A copy from
// ordinary (pageable) memory makes the CUDA driver stage it synchronously;
// from pinned memory the copy engine runs it while the host goes on. Each
// copy takes the next buffer of a small ring, waits (rarely) until that
// buffer's previous copy has left it, copies the caller's bytes in and
// queues the transfer: the caller may reuse its memory at once, as the
// DeviceMemory contract says.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <mutex>
#include <vector>

namespace strata::cuda {

class PinnedStaging {
public:
  PinnedStaging() = default;
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // Queues dst <- src (bytes) on `stream`. Copies larger than a buffer may
  // usefully be (kMaxBytes) go directly from the caller's memory, waited for
  // when that memory is page-locked.
  void copy_to_device(void* dst, const void* src, size_t bytes, cudaStream_t stream);

  static constexpr size_t kMaxBytes = size_t{64} << 20;

private:
  struct Slot {
    void* host = nullptr;
    size_t bytes = 0;
    cudaEvent_t done = nullptr;  // recorded after the transfer out of `host`
  };
  // Enough slots for a step's inputs (features, labels) several steps deep.
  static constexpr size_t kSlots = 8;
  std::mutex mutex_;
  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
  size_t next_ = 0;
};

}  // namespace strata::cuda
