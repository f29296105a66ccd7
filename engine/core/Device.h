#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata {

// Sim is the strict simulated accelerator (backend/sim/): CPU kernels run
// asynchronously on a device thread against memory the host cannot touch. It
// exists to test the device discipline on machines without a GPU.
enum class DeviceKind { Cpu, Gpu, Sim };

// A logical device such as "cpu:0" or "gpu:1". CPU devices are logical: each
// is one replica thread with a share of the machine's cores.
struct Device {
  DeviceKind kind = DeviceKind::Cpu;
  int index = 0;

  std::string str() const;
  // Host memory: tensors on it may be read and written by host code.
  bool is_host() const { return kind == DeviceKind::Cpu; }
  // Whether tensors on the two devices share one memory: every cpu device is
  // the host's memory (cpu:1 is a replica's share of cores, not other memory).
  bool same_memory(const Device& other) const { return (is_host() && other.is_host()) || *this == other; }
  bool operator==(const Device&) const = default;

  // Parses "cpu:0", "gpu:1", "sim:0", "cpu" (= cpu:0); throws bad_input naming the text.
  static Device parse(const std::string& text);
  // Parses a comma-separated list, e.g. "cpu:0,cpu:1".
  static std::vector<Device> parse_list(const std::string& text);
};

// What the machine has: used by --list-devices and the dashboard.
struct DeviceInfo {
  Device device;
  std::string name;
  int64_t memory_bytes = 0;
  int threads = 1;
  // For GPUs: compute capability and driver/runtime versions, as users quote them.
  std::string detail;
};

// A GPU's load right now (NVML, when the driver has it). Each figure is read
// on its own: a MIG instance has memory figures but no utilization.
struct DeviceUsage {
  std::optional<double> utilization;  // share of the last sample period a kernel ran, 0..1
  std::optional<int64_t> memory_used, memory_total;
};

// The GPUs this process can use. The CUDA backend provides them when the
// build has one; `unavailable` says why there are none (no CUDA in this
// build, no driver, no device), empty when there are.
struct GpuInventory {
  std::vector<DeviceInfo> gpus;
  std::string unavailable;
};
struct GpuProvider {
  GpuInventory (*inventory)() = nullptr;
  // False when the load cannot be read (no NVML, or no figure of it); `out`
  // is then untouched.
  bool (*usage)(int index, DeviceUsage& out) = nullptr;
  // Whether kernels on GPU `reader` can address GPU `owner`'s memory (peer
  // access; consumer GPUs often have none). Asked without opening either GPU.
  bool (*peer_access)(int reader, int owner) = nullptr;
};
// Installs `provider`; returns the one it replaces (tests put it back).
GpuProvider set_gpu_provider(const GpuProvider& provider);
GpuInventory gpu_inventory();
bool gpu_usage(int index, DeviceUsage& out);
// Whether a kernel running on `reader` can read and write memory of `owner`
// directly: the same memory, sim devices (all in host memory), or GPUs with
// peer access between them.
bool direct_access(const Device& reader, const Device& owner);

int hardware_threads();
// The machine's devices as users see them: its CPU devices, then its GPUs. Simulated devices are listed only
// when the environment variable STRATA_SIM_DEVICES=N asks for N of them.
std::vector<DeviceInfo> list_devices();
// The same with the GPUs of an inventory already taken (one that also
// wants its `unavailable` reason asks once). A bad STRATA_SIM_DEVICES or
// STRATA_SIM_MEMORY_GB throws bad_input, or, given `sim_problem`, lists no
// sim devices and says why there (the dashboard's device panel shows it).
std::vector<DeviceInfo> list_devices(GpuInventory gpus, std::string* sim_problem = nullptr);
// How many sim devices exist (they can always be named explicitly).
constexpr int kSimDeviceCount = 8;
// STRATA_SIM_DEVICES (0 to kSimDeviceCount; unset: 0); bad_input otherwise.
int listed_sim_devices();
// Each sim device's memory: 16 GiB of address space, or STRATA_SIM_MEMORY_GB
// (1 to 4096); bad_input otherwise.
size_t sim_device_memory_bytes();

}  // namespace strata
