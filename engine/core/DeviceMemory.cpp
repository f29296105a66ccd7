#include "core/DeviceMemory.h"

#include "core/Error.h"

namespace strata {

namespace {
std::atomic<DeviceMemoryProvider> g_provider{nullptr};
}  // namespace

DeviceMemoryProvider set_device_memory_provider(DeviceMemoryProvider provider) { return g_provider.exchange(provider); }

DeviceMemory& device_memory(const Device& device) {
  if (device.is_host()) throw runtime_error("device_memory: " + device.str() + " is host memory");
  auto provider = g_provider.load();
  if (!provider) throw bad_input("device " + device.str() + ": this program has no backend for it");
  return provider(device);
}

// The host and devices without graphs run every step as it is called.
void DeviceMemory::begin_capture() { throw runtime_error("this device cannot capture a step as a graph"); }
GraphPtr DeviceMemory::end_capture() { throw runtime_error("this device cannot capture a step as a graph"); }
void DeviceMemory::replay(const GraphPtr&) { throw runtime_error("this device cannot replay a graph"); }

}  // namespace strata
