#pragma once
#include <string>
#include <vector>

namespace strata {

enum class DeviceKind { Cpu, Gpu };

// A logical device such as "cpu:0" or "gpu:1". CPU devices are logical: each
// is one replica thread with a share of the machine's cores.
struct Device {
  DeviceKind kind = DeviceKind::Cpu;
  int index = 0;

  std::string str() const { return (kind == DeviceKind::Cpu ? "cpu:" : "gpu:") + std::to_string(index); }
  bool operator==(const Device&) const = default;

  // Parses "cpu:0", "gpu:1", "cpu" (= cpu:0); throws bad_input naming the text.
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
};

int hardware_threads();
std::vector<DeviceInfo> list_devices();

}  // namespace strata
