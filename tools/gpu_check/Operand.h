#pragma once
// One argument of a kernel under comparison: the same values twice, in host
// memory for the CPU backend and in the device's memory for its backend. A
// kernel body asks for the side it is running on, so one lambda serves both
// calls and the two can never drift apart.
#include <utility>

#include "core/Tensor.h"

namespace strata::gpu_check {

enum class Side { Cpu, Device };

class Operand {
public:
  // No tensor on either side: the null pointer of an optional argument.
  Operand() = default;
  Operand(Tensor cpu, Tensor device) : cpu_(std::move(cpu)), device_(std::move(device)) {}

  Tensor& on(Side side) { return side == Side::Cpu ? cpu_ : device_; }
  float* f(Side side) { return on(side).ptr(); }
  int32_t* i(Side side) { return on(side).int_ptr(); }
  uint8_t* u8(Side side) { return on(side).byte_ptr(); }

private:
  Tensor cpu_, device_;
};

}  // namespace strata::gpu_check
