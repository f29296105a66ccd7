#include "distribute/collectives/HostGradients.h"

#include "core/DeviceMemory.h"

namespace strata {

HostGradients::~HostGradients() {
  if (!pinned_by_.is_host() && !buffer_.empty()) device_memory(pinned_by_).unpin_host_memory(buffer_.data());
}

void HostGradients::reserve(size_t floats, const Device& device) {
  if (buffer_.size() >= floats && pinned_by_ == device) return;
  if (!pinned_by_.is_host() && !buffer_.empty()) device_memory(pinned_by_).unpin_host_memory(buffer_.data());
  pinned_by_ = Device{};
  if (buffer_.size() < floats) buffer_ = std::vector<float>(floats);
  if (!device.is_host()) {
    device_memory(device).pin_host_memory(buffer_.data(), buffer_.size() * sizeof(float));
    pinned_by_ = device;
  }
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
    float* dst = buffer_.data() + offset;
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
