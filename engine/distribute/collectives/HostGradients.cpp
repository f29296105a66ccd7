#include "distribute/collectives/HostGradients.h"

#include <cstdlib>

#include "core/DeviceMemory.h"
#include "core/Error.h"
#include "core/WholePages.h"

namespace strata {

HostGradients::~HostGradients() {
  unpin();
  std::free(buffer_);
}

void HostGradients::unpin() {
  if (pinned_) device_memory(prepared_for_).unpin_host_memory(buffer_);
  pinned_ = false;
  prepared_for_ = Device{};
}

void HostGradients::reserve(size_t floats, const Device& device) {
  if (capacity_ >= floats && prepared_for_ == device) return;
  unpin();
  if (capacity_ < floats) {
    std::free(buffer_);
    buffer_ = nullptr;
    capacity_ = 0;
    size_t bytes = floats * sizeof(float);
    buffer_ = static_cast<float*>(allocate_whole_pages(bytes));
    capacity_ = bytes / sizeof(float);
  }
  try {
    device_memory(device).pin_host_memory(buffer_, capacity_ * sizeof(float));
    pinned_ = true;
  } catch (const Error&) {
    // Pageable memory works too: the driver stages the copies, and gather()
    // waits for them all before anyone reads the buffer. Not asked again.
  }
  prepared_for_ = device;
}

const std::vector<const float*>& HostGradients::gather(const std::vector<Tensor>& grads) {
  views_.clear();
  size_t device_floats = 0;
  Device device{};
  for (const Tensor& g : grads)
    if (!g.on_host()) {
      device_floats += static_cast<size_t>(g.numel());
      device = g.device();
    }
  if (device_floats > 0) reserve(device_floats, device);
  size_t offset = 0;
  std::vector<Device> to_wait;
  for (const Tensor& g : grads) {
    if (g.on_host()) {
      views_.push_back(g.data());
      continue;
    }
    float* dst = buffer_ + offset;
    device_memory(g.device()).copy_to_host(dst, g.ptr(), g.bytes());
    views_.push_back(dst);
    offset += static_cast<size_t>(g.numel());
    bool seen = false;
    for (const Device& d : to_wait) seen = seen || d == g.device();
    if (!seen) to_wait.push_back(g.device());
  }
  for (const Device& d : to_wait) device_memory(d).synchronize();
  return views_;
}

}  // namespace strata
