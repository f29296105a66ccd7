// Which backend serves which device, and the device memory tensors use.
#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "backend/Backend.h"
#include "backend/cpu/CpuBackend.h"
#include "backend/sim/SimBackend.h"
#include "core/Error.h"
#ifdef STRATA_WITH_CUDA
#include "backend/cuda/CudaBackend.h"
#include "backend/cuda/CudaDevices.h"
#endif

namespace strata {

namespace {
thread_local Backend* t_cpu_backend = nullptr;

SimBackend& sim_backend(int index) {
  if (index < 0 || index >= kSimDeviceCount)
    throw bad_input("device sim:" + std::to_string(index) + " does not exist (sim:0 to sim:" +
                    std::to_string(kSimDeviceCount - 1) + ")");
  // Created on first use and never destroyed: tensors in statics may outlive
  // any destruction order we could choose.
  static std::array<std::once_flag, kSimDeviceCount> once;
  static std::array<SimBackend*, kSimDeviceCount> backends{};
  std::call_once(once[static_cast<size_t>(index)], [index] { backends[static_cast<size_t>(index)] = new SimBackend(index); });
  return *backends[static_cast<size_t>(index)];
}

#ifdef STRATA_WITH_CUDA
Backend& gpu_backend(int index) {
  // One per GPU, created on first use and never destroyed (as sim's). Every
  // op and allocation on a GPU asks for its backend: once made, it is found
  // without a lock (replica threads would contend on one).
  constexpr int kMaxGpus = 256;
  static std::array<std::atomic<CudaBackend*>, kMaxGpus> made{};
  if (index >= 0 && index < kMaxGpus)
    if (CudaBackend* b = made[static_cast<size_t>(index)].load(std::memory_order_acquire)) return *b;
  cuda::require_device(index);
  if (index >= kMaxGpus) throw bad_input("device gpu:" + std::to_string(index) + ": at most 256 GPUs are supported");
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  auto& slot = made[static_cast<size_t>(index)];
  if (!slot.load(std::memory_order_relaxed)) slot.store(new CudaBackend(index), std::memory_order_release);
  return *slot.load(std::memory_order_relaxed);
}
#else
Backend& gpu_backend(int index) {
  throw bad_input("device gpu:" + std::to_string(index) + " is not available: " + gpu_inventory().unavailable);
}
#endif

DeviceMemory& memory_of(const Device& device) { return backend_for(device); }

// Installed before main(): tensors find device memory, and list_devices()
// the GPUs, through core's hooks.
const bool g_registered = [] {
  set_device_memory_provider(&memory_of);
#ifdef STRATA_WITH_CUDA
  set_gpu_provider(GpuProvider{&cuda::inventory, &cuda::usage, &cuda::peer_access});
#endif
  return true;
}();
}  // namespace

Backend& cpu_backend() {
  if (t_cpu_backend) return *t_cpu_backend;
  static CpuBackend shared(hardware_threads());
  return shared;
}

Backend& backend_for(const Device& device) {
  (void)g_registered;
  switch (device.kind) {
    case DeviceKind::Cpu: return cpu_backend();
    case DeviceKind::Sim: return sim_backend(device.index);
    case DeviceKind::Gpu: return gpu_backend(device.index);
  }
  throw bad_input("device " + device.str() + ": unknown kind");
}

ScopedCpuBackend::ScopedCpuBackend(Backend* b) : previous_(t_cpu_backend) { t_cpu_backend = b; }
ScopedCpuBackend::~ScopedCpuBackend() { t_cpu_backend = previous_; }

}  // namespace strata
