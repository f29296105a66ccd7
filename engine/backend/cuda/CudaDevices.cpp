#include "backend/cuda/CudaDevices.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "backend/cuda/Nvml.h"
#include "core/Error.h"

namespace strata::cuda {

namespace {
struct Census {
  int count = 0;
  std::string why;
  std::vector<std::string> pci;
  std::vector<char> peer;  // peer[reader * count + owner]
};

std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// CUDA_VISIBLE_DEVICES limits and renumbers what this process sees: a
// message about missing GPUs says so, or it reads as false on a machine
// that has them.
std::string visible_devices_note() {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + " limits the GPUs this process sees)" : "";
}

const Census& census() {
  static const Census c = [] {
    Census out;
    const cudaError_t e = cudaGetDeviceCount(&out.count);
    if (e != cudaSuccess) {
      cudaGetLastError();
      out.count = 0;
      // Without a driver the runtime says "driver version is insufficient";
      // name the missing library instead, which is what the user must fix.
      void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
      if (!driver) {
        out.why = "no NVIDIA driver is installed (libcuda.so.1 not found)";
      } else {
        dlclose(driver);
        out.why = std::string("the CUDA runtime found no usable GPU: ") + cudaGetErrorString(e) + " (" +
                  cudaGetErrorName(e) + ")";
        // The versions say which to upgrade (cudaDriverGetVersion answers
        // even for a driver too old for this runtime).
        int driver_version = 0;
        if (e == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver_version) == cudaSuccess)
          out.why += "; the driver supports CUDA " + cuda_version(driver_version) + ", this build needs " +
                     cuda_version(CUDART_VERSION);
        // On NVSwitch machines (HGX H100/H200/B200) the GPUs stay in this
        // state until the fabric manager has set up the switches.
        if (e == cudaErrorSystemNotReady)
          out.why +=
              "; on a machine whose GPUs are joined by NVSwitch, start the fabric manager "
              "(systemctl start nvidia-fabricmanager) and check its version matches the driver's";
      }
    } else if (out.count == 0) {
      out.why = "the CUDA runtime found no GPU";
    }
    if (!out.why.empty()) out.why += visible_devices_note();
    for (int i = 0; i < out.count; ++i) {
      char bus[32] = {};
      out.pci.push_back(cudaDeviceGetPCIBusId(bus, sizeof bus, i) == cudaSuccess ? bus : "");
    }
    // A device attribute query: no context is created on either GPU.
    out.peer.assign(static_cast<size_t>(out.count) * static_cast<size_t>(out.count), 0);
    for (int reader = 0; reader < out.count; ++reader)
      for (int owner = 0; owner < out.count; ++owner) {
        int can = reader == owner;
        if (!can && cudaDeviceCanAccessPeer(&can, reader, owner) != cudaSuccess) {
          cudaGetLastError();
          can = 0;
        }
        out.peer[static_cast<size_t>(reader * out.count + owner)] = static_cast<char>(can != 0);
      }
    return out;
  }();
  return c;
}

std::string version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
}  // namespace

int device_count(std::string* why) {
  const Census& c = census();
  if (why) *why = c.why;
  return c.count;
}

GpuInventory inventory() {
  GpuInventory out;
  const Census& c = census();
  out.unavailable = c.why;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  for (int i = 0; i < c.count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    DeviceInfo info;
    info.device = Device{DeviceKind::Gpu, i};
    info.name = p.name;
    info.memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
    info.threads = 1;
    info.detail = "compute capability " + std::to_string(p.major) + "." + std::to_string(p.minor) + ", " +
                  std::to_string(p.multiProcessorCount) + " SMs, driver " + version(driver) + ", CUDA runtime " +
                  version(runtime);
    // Which reductions can run between GPUs in place (docs/gpu.md).
    if (c.count > 1) {
      std::string peers;
      for (int j = 0; j < c.count; ++j)
        if (j != i && c.peer[static_cast<size_t>(i * c.count + j)])
          peers += (peers.empty() ? "gpu:" : ", gpu:") + std::to_string(j);
      info.detail += peers.empty() ? ", no peer access to the other GPUs" : ", peer access to " + peers;
    }
    out.gpus.push_back(std::move(info));
  }
  return out;
}

bool usage(int index, DeviceUsage& out) {
  const Census& c = census();
  if (index < 0 || index >= c.count) return false;
  return Nvml::instance().usage(c.pci[static_cast<size_t>(index)], out);
}

namespace {
std::mutex g_denied_mutex;
std::set<std::pair<int, int>> g_denied;  // (reader, owner)
}  // namespace

bool peer_access(int reader, int owner) {
  const Census& c = census();
  if (reader < 0 || owner < 0 || reader >= c.count || owner >= c.count) return false;
  if (!c.peer[static_cast<size_t>(reader * c.count + owner)]) return false;
  std::lock_guard lock(g_denied_mutex);
  return !g_denied.contains({reader, owner});
}

void deny_peer_access(int reader, int owner) {
  std::lock_guard lock(g_denied_mutex);
  g_denied.insert({reader, owner});
}

void require_device(int index) {
  std::string why;
  const int count = device_count(&why);
  const std::string name = "gpu:" + std::to_string(index);
  if (count == 0) throw bad_input("device " + name + " is not available: " + why);
  if (index < 0 || index >= count)
    throw bad_input("device " + name + " does not exist: this machine has " + std::to_string(count) +
                    (count == 1 ? " GPU (gpu:0)" : " GPUs (gpu:0 to gpu:" + std::to_string(count - 1) + ")") +
                    visible_devices_note());
}

}  // namespace strata::cuda
