#include "backend/cuda/Nvml.h"

#include <dlfcn.h>

namespace strata::cuda {

namespace {
// The few NVML declarations we use (nvml.h is not part of every toolkit).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*);
};

Nvml& Nvml::instance() {
  static Nvml nvml;  // never unloaded: the driver library lives as long as the process
  return nvml;
}

Nvml::Nvml() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  auto* api = new Api{};
  api->init = reinterpret_cast<nvmlReturn_t (*)()>(dlsym(lib, "nvmlInit_v2"));
  api->by_pci = reinterpret_cast<nvmlReturn_t (*)(const char*, nvmlDevice_t*)>(
      dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  api->utilization = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*)>(
      dlsym(lib, "nvmlDeviceGetUtilizationRates"));
  api->memory = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
  if (!api->init || !api->by_pci || !api->utilization || !api->memory || api->init() != 0) {
    delete api;
    return;
  }
  api_ = api;
  ok_ = true;
}

bool Nvml::usage(const std::string& pci_bus_id, DeviceUsage& out) const {
  if (!ok_) return false;
  nvmlDevice_t device = nullptr;
  if (api_->by_pci(pci_bus_id.c_str(), &device) != 0) return false;
  // Each figure on its own: a MIG-partitioned GPU answers NOT_SUPPORTED for
  // utilization and may still give memory.
  nvmlUtilization_t util{};
  nvmlMemory_t mem{};
  const bool has_util = api_->utilization(device, &util) == 0, has_mem = api_->memory(device, &mem) == 0;
  if (!has_util && !has_mem) return false;
  if (has_util) out.utilization = util.gpu / 100.0;
  if (has_mem) {
    out.memory_used = static_cast<int64_t>(mem.used);
    out.memory_total = static_cast<int64_t>(mem.total);
  }
  return true;
}

}  // namespace strata::cuda
