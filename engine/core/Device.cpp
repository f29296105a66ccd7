#include "core/Device.h"

#include <cstdlib>
#include <fstream>
#include <thread>
#include <utility>

#include "core/Error.h"
#include "core/ParseInteger.h"

namespace strata {

std::string Device::str() const {
  switch (kind) {
    case DeviceKind::Cpu: return "cpu:" + std::to_string(index);
    case DeviceKind::Gpu: return "gpu:" + std::to_string(index);
    case DeviceKind::Sim: return "sim:" + std::to_string(index);
  }
  return "?";
}

Device Device::parse(const std::string& text) {
  auto colon = text.find(':');
  std::string kind = text.substr(0, colon);
  Device d;
  if (kind == "cpu" || kind == "CPU") {
    d.kind = DeviceKind::Cpu;
  } else if (kind == "gpu" || kind == "GPU" || kind == "cuda") {
    d.kind = DeviceKind::Gpu;
  } else if (kind == "sim") {
    d.kind = DeviceKind::Sim;
  } else {
    throw bad_input("device '" + text + "': unknown kind (expected cpu:N or gpu:N)");
  }
  if (colon == std::string::npos) return d;
  const std::optional<int> value = parse_integer<int>(std::string_view(text).substr(colon + 1));
  if (!value || *value < 0) throw bad_input("device '" + text + "': index must be a non-negative integer");
  d.index = *value;
  return d;
}

std::vector<Device> Device::parse_list(const std::string& text) {
  if (text.find_first_not_of(" ,") == std::string::npos)
    throw bad_input("device list '" + text + "' is empty: zero replicas (give e.g. cpu:0,cpu:1)");
  std::vector<Device> out;
  size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (part.empty()) throw bad_input("device list '" + text + "': empty entry");
    out.push_back(parse(part));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

int hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

namespace {
std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "CPU";
}

int64_t total_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  while (in >> key >> kb) {
    if (key == "MemTotal:") return kb * 1024;
    in.ignore(1 << 10, '\n');
  }
  return 0;
}
}  // namespace

std::vector<DeviceInfo> list_devices() { return list_devices(gpu_inventory()); }

std::vector<DeviceInfo> list_devices(GpuInventory gpus, std::string* sim_problem) {
  // One logical CPU device per hardware thread: that is the most CPU replicas
  // that can each own a core.
  std::vector<DeviceInfo> out;
  const int n = hardware_threads();
  const std::string name = cpu_model_name();
  const int64_t mem = total_memory_bytes();
  for (int i = 0; i < n; ++i) out.push_back({Device{DeviceKind::Cpu, i}, name, mem, 1, {}});
  for (auto& gpu : gpus.gpus) out.push_back(std::move(gpu));
  int sims = 0;
  size_t sim_memory = 0;
  try {
    sims = listed_sim_devices();
    if (sims > 0) sim_memory = sim_device_memory_bytes();
  } catch (const Error& e) {
    if (!sim_problem) throw;
    *sim_problem = std::string(e.what()) + "; no simulated devices are listed";
    sims = 0;
  }
  for (int i = 0; i < sims; ++i)
    out.push_back({Device{DeviceKind::Sim, i}, "Simulated accelerator (testing)", static_cast<int64_t>(sim_memory), 1,
                   "strict stream and memory checks"});
  return out;
}

namespace {
GpuProvider g_gpu_provider;
}  // namespace

GpuProvider set_gpu_provider(const GpuProvider& provider) { return std::exchange(g_gpu_provider, provider); }

GpuInventory gpu_inventory() {
  if (!g_gpu_provider.inventory)
    return {{}, "this build has no CUDA backend (rebuild with NVIDIA's CUDA toolkit 12 or newer installed: docs/gpu.md)"};
  return g_gpu_provider.inventory();
}

bool gpu_usage(int index, DeviceUsage& out) { return g_gpu_provider.usage && g_gpu_provider.usage(index, out); }

bool direct_access(const Device& reader, const Device& owner) {
  if (reader.same_memory(owner)) return true;  // every pair of cpu devices too
  if (reader.kind != owner.kind) return false;
  if (reader.kind == DeviceKind::Sim) return true;  // all in host memory
  return g_gpu_provider.peer_access && g_gpu_provider.peer_access(reader.index, owner.index);
}

namespace {
// The whole number from lo to hi that the environment variable `name` holds,
// or nullopt where it is unset or empty. Anything else is refused, naming the
// variable: a typo must not quietly give another number of devices or GiB.
std::optional<int> environment_integer(const char* name, int lo, int hi, const std::string& what) {
  const char* env = std::getenv(name);
  if (!env || !*env) return std::nullopt;
  const std::optional<int> value = parse_integer<int>(env);
  if (!value || *value < lo || *value > hi)
    throw bad_input(std::string(name) + ": expected " + what + " from " + std::to_string(lo) + " to " + std::to_string(hi) +
                    ", got '" + env + "'");
  return value;
}
}  // namespace

size_t sim_device_memory_bytes() {
  // Virtual space only: pages are backed as they are first written.
  const int gib = environment_integer("STRATA_SIM_MEMORY_GB", 1, 4096, "a whole number of GiB").value_or(16);
  return static_cast<size_t>(gib) << 30;
}

int listed_sim_devices() {
  return environment_integer("STRATA_SIM_DEVICES", 0, kSimDeviceCount, "a number of simulated devices").value_or(0);
}

}  // namespace strata
