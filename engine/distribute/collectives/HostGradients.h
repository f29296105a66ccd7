#pragma once
#include <cstddef>
#include <vector>

#include "core/Device.h"
#include "core/Tensor.h"

namespace strata {

// A parameter-server worker's gradients in host memory, where the servers
// (and MPI) read them: every gradient on a device is copied into one buffer
// that the device page-locks, all copies queued before a single wait (one
// synchronisation per push instead of one per variable, and DMA instead of
// the driver's staging through pageable memory).
class HostGradients {
public:
  HostGradients() = default;
  ~HostGradients();
  HostGradients(const HostGradients&) = delete;
  HostGradients& operator=(const HostGradients&) = delete;

  // Host pointers to each gradient's values, valid until the next gather.
  const std::vector<const float*>& gather(const std::vector<Tensor>& grads);

private:
  void reserve(size_t floats, const Device& device);
  void unpin();

  float* buffer_ = nullptr;  // whole pages of its own (allocate_whole_pages)
  size_t capacity_ = 0;      // floats
  Device prepared_for_{};    // the device whose copies buffer_ receives (host: none yet)
  bool pinned_ = false;      // page-locked by that device (else pageable: the lock was refused)
  std::vector<const float*> views_;
};

}  // namespace strata
