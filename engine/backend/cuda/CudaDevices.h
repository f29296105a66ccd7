#pragma once
// What the CUDA runtime finds on this machine, asked once per process.
#include <string>

#include "core/Device.h"

namespace strata::cuda {

// How many GPUs the runtime sees; 0 with `why` set when it sees none (no
// driver, driver too old for this build's runtime, no device).
int device_count(std::string* why = nullptr);
// The inventory for list_devices() and the dashboard.
GpuInventory inventory();
// Live load of gpu:`index` through NVML.
bool usage(int index, DeviceUsage& out);
// Whether kernels on gpu:`reader` can address gpu:`owner`'s memory.
bool peer_access(int reader, int owner);
// Throws bad_input naming the device when gpu:`index` cannot be used.
void require_device(int index);

}  // namespace strata::cuda
