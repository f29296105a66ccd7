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
// Whether kernels on gpu:`reader` can address gpu:`owner`'s memory: the
// hardware allows it and, once both GPUs' backends are open, the access was
// granted (see deny_peer_access).
bool peer_access(int reader, int owner);
// Records that granting gpu:`reader` access to gpu:`owner`'s memory failed
// although the hardware allows it: peer_access answers false for the pair
// from then on, so no collective that needs it is chosen (a read through an
// ungranted pool would fault the whole context with an illegal address).
void deny_peer_access(int reader, int owner);
// Throws bad_input naming the device when gpu:`index` cannot be used.
void require_device(int index);

}  // namespace strata::cuda
