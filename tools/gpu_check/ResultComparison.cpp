#include "ResultComparison.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

namespace strata::gpu_check {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string size_mismatch(size_t device, size_t cpu) {
  return "device gave " + std::to_string(device) + " elements, the CPU " + std::to_string(cpu);
}

// "3 of 1000 elements off; first [17]: device 0.5, cpu 0.25": enough to tell
// a boundary bug (the last elements), a stride bug (every k-th) and a
// precision drift (all of them) apart without a debugger.
template <typename T>
std::string describe(size_t bad, size_t n, size_t first, T device, T cpu, const char* note = "") {
  std::ostringstream s;
  s.precision(9);
  s << bad << " of " << n << " elements off; first [" << first << "]: device " << device << ", cpu " << cpu << note;
  return s.str();
}
// How many elements differ, and the first that does.
template <typename T>
std::pair<size_t, size_t> mismatches(std::span<const T> device, std::span<const T> cpu) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < cpu.size(); ++i)
    if (device[i] != cpu[i] && bad++ == 0) first = i;
  return {bad, first};
}
}  // namespace

double element_error(float device, float cpu) {
  const bool dn = std::isnan(device), cn = std::isnan(cpu);
  if (dn || cn) return dn && cn ? 0.0 : kInf;
  if (std::isinf(device) || std::isinf(cpu)) return device == cpu ? 0.0 : kInf;
  const double d = device, c = cpu;
  return std::fabs(d - c) / std::max(1.0, std::fabs(c));
}

Comparison compare_floats(std::span<const float> device, std::span<const float> cpu, double tolerance) {
  Comparison r;
  if (device.size() != cpu.size()) return {kInf, false, size_mismatch(device.size(), cpu.size())};
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double e = element_error(device[i], cpu[i]);
    r.max_error = std::max(r.max_error, e);
    // `!(e <= tolerance)` would also catch a NaN error; element_error never gives one.
    if (e > tolerance && bad++ == 0) first = i;
  }
  if (bad > 0) {
    r.passed = false;
    const bool poison = std::isnan(device[first]) && !std::isnan(cpu[first]);
    r.detail = describe(bad, cpu.size(), first, device[first], cpu[first],
                        poison ? " (NaN: the poison left unwritten, or computed)" : "");
  }
  return r;
}

Comparison compare_ints(std::span<const int32_t> device, std::span<const int32_t> cpu) {
  if (device.size() != cpu.size()) return {kInf, false, size_mismatch(device.size(), cpu.size())};
  Comparison r;
  const auto [bad, first] = mismatches(device, cpu);
  if (bad > 0) {
    // An integer mismatch has no meaningful size: report it as infinite.
    r = {kInf, false, describe(bad, cpu.size(), first, device[first], cpu[first])};
    if (device[first] == std::bit_cast<int32_t>(0x7fc00000u)) r.detail += " (the poison: never written)";
  }
  return r;
}

Comparison compare_bits(std::span<const uint32_t> device, std::span<const uint32_t> cpu) {
  if (device.size() != cpu.size()) return {kInf, false, size_mismatch(device.size(), cpu.size())};
  Comparison r;
  const auto [bad, first] = mismatches(device, cpu);
  if (bad > 0) {
    std::ostringstream d, c;
    d << "0x" << std::hex << device[first];
    c << "0x" << std::hex << cpu[first];
    r = {kInf, false, describe(bad, cpu.size(), first, d.str(), c.str())};
  }
  return r;
}

}  // namespace strata::gpu_check
