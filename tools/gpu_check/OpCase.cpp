#include "OpCase.h"

#include <bit>
#include <cstring>
#include <stdexcept>

#include "core/Error.h"

namespace strata::gpu_check {

OpCase::OpCase(const Device& device, Backend& device_backend, Rng& rng)
    : device_(device), device_backend_(device_backend), rng_(rng) {}

std::vector<float> OpCase::uniform(int64_t n, float lo, float hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = lo + (hi - lo) * rng_.uniform();
  return v;
}

std::vector<int32_t> OpCase::integers(int64_t n, int32_t lo, int32_t hi) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = lo + static_cast<int32_t>(rng_.below(static_cast<uint64_t>(hi - lo)));
  return v;
}

Operand& OpCase::input(const Shape& shape, float lo, float hi) { return values(shape, uniform(shape.numel(), lo, hi)); }

Operand& OpCase::values(const Shape& shape, const std::vector<float>& v) {
  // Tensor::from on the device queues a copy_from_host in its stream, ahead of the kernel.
  return operands_.emplace_back(Tensor::from(shape, v), Tensor::from(shape, v, device_));
}

Operand& OpCase::ints(const Shape& shape, const std::vector<int32_t>& v) {
  return operands_.emplace_back(Tensor::from_ints(shape, v), Tensor::from_ints(shape, v, device_));
}

Operand& OpCase::bytes(const Shape& shape, const std::vector<uint8_t>& v) {
  if (static_cast<int64_t>(v.size()) != shape.numel()) throw std::logic_error("OpCase::bytes: size mismatch");
  Tensor host = Tensor::empty(shape, DType::UInt8), dev = Tensor::empty(shape, DType::UInt8, device_);
  if (!v.empty()) {
    std::memcpy(host.byte_ptr(), v.data(), v.size());
    device_backend_.copy_from_host(dev.byte_ptr(), v.data(), v.size());
  }
  return operands_.emplace_back(std::move(host), std::move(dev));
}

Operand& OpCase::poisoned(const Shape& shape, DType dtype) {
  if (element_size(dtype) != 4) throw std::logic_error("OpCase::poisoned: 32-bit outputs only");
  Tensor host = Tensor::empty(shape, dtype), dev = Tensor::empty(shape, dtype, device_);
  cpu_backend().fill32(host.ptr(), shape.numel(), kPoison);
  device_backend_.fill32(dev.ptr(), shape.numel(), kPoison);
  return operands_.emplace_back(std::move(host), std::move(dev));
}

void OpCase::run(const Kernel& kernel) {
  kernel(cpu_backend(), Side::Cpu);
  kernel(device_backend_, Side::Device);
  // The device's errors surface here (sim rethrows a failed kernel at its sync point).
  device_backend_.synchronize();
}

void OpCase::expect(const std::string& output, Operand& operand, double tolerance, Rule rule) {
  expected_.push_back({output, &operand, tolerance, rule, {}, {}});
}

void OpCase::expect_words(const std::string& output, std::vector<uint32_t> device, std::vector<uint32_t> cpu) {
  expected_.push_back({output, nullptr, 0.0, Rule::Bits, std::move(device), std::move(cpu)});
}

std::vector<uint32_t> OpCase::read_words(Tensor& t) {
  if (element_size(t.dtype()) != 4) throw std::logic_error("OpCase: only 32-bit outputs are compared");
  std::vector<uint32_t> out(static_cast<size_t>(t.numel()));
  if (out.empty()) return out;
  if (t.on_host()) {
    std::memcpy(out.data(), t.ptr(), t.bytes());
  } else {
    device_backend_.copy_to_host(out.data(), t.ptr(), t.bytes());
    device_backend_.synchronize();
  }
  return out;
}

std::vector<OpCase::Outcome> OpCase::outcomes() {
  if (expected_.empty()) throw std::logic_error("OpCase: a check without outputs to compare");
  std::vector<Outcome> out;
  for (auto& e : expected_) {
    std::vector<uint32_t> dev = e.operand ? read_words(e.operand->on(Side::Device)) : e.device_words;
    std::vector<uint32_t> cpu = e.operand ? read_words(e.operand->on(Side::Cpu)) : e.cpu_words;
    Comparison c;
    if (e.rule == Rule::Bits) {
      c = compare_bits(dev, cpu);
    } else if (e.operand->on(Side::Cpu).dtype() == DType::Int32) {
      std::vector<int32_t> d(dev.size()), h(cpu.size());
      for (size_t i = 0; i < dev.size(); ++i) d[i] = std::bit_cast<int32_t>(dev[i]);
      for (size_t i = 0; i < cpu.size(); ++i) h[i] = std::bit_cast<int32_t>(cpu[i]);
      c = compare_ints(d, h);
    } else {
      std::vector<float> d(dev.size()), h(cpu.size());
      for (size_t i = 0; i < dev.size(); ++i) d[i] = std::bit_cast<float>(dev[i]);
      for (size_t i = 0; i < cpu.size(); ++i) h[i] = std::bit_cast<float>(cpu[i]);
      c = compare_floats(d, h, e.tolerance);
    }
    out.push_back({e.output, e.rule == Rule::Bits ? 0.0 : e.tolerance, std::move(c)});
  }
  return out;
}

}  // namespace strata::gpu_check
