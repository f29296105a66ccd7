#pragma once
// NVIDIA's management library, loaded at run time: it ships with the driver,
// not the toolkit, so the build never depends on it and a machine without it
// simply shows no live utilization.
#include <string>

#include "core/Device.h"

namespace strata::cuda {

class Nvml {
public:
  // The process-wide instance; loads libnvidia-ml.so.1 on first use.
  static Nvml& instance();
  bool available() const { return ok_; }
  // Utilization and memory of the GPU at `pci_bus_id` (cudaDeviceGetPCIBusId's form).
  bool usage(const std::string& pci_bus_id, DeviceUsage& out) const;

private:
  Nvml();
  struct Api;
  Api* api_ = nullptr;
  bool ok_ = false;
};

}  // namespace strata::cuda
