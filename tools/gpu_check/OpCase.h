#pragma once
// One op check being built: its operands (each on both sides), the kernel
// call, and the outputs to compare. OpHarness::check creates one per check,
// so everything a check allocates is freed, and everything it throws is
// caught, per check.
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "Operand.h"
#include "ResultComparison.h"
#include "backend/Backend.h"
#include "core/Rng.h"

namespace strata::gpu_check {

class OpCase {
public:
  using Kernel = std::function<void(Backend&, Side)>;
  enum class Rule { Near, Bits };
  // What a check found for one output.
  struct Outcome {
    std::string output;
    double tolerance;
    Comparison comparison;
  };

  OpCase(const Device& device, Backend& device_backend, Rng& rng);

  // Fresh random values (uniform in [lo, hi)), and seeded integers in [lo, hi).
  std::vector<float> uniform(int64_t n, float lo, float hi);
  std::vector<int32_t> integers(int64_t n, int32_t lo, int32_t hi);
  Rng& rng() { return rng_; }
  Backend& device_backend() { return device_backend_; }

  // Inputs, and outputs an op accumulates into: the same values on both sides.
  Operand& input(const Shape& shape, float lo, float hi);
  Operand& values(const Shape& shape, const std::vector<float>& v);
  Operand& ints(const Shape& shape, const std::vector<int32_t>& v);
  Operand& bytes(const Shape& shape, const std::vector<uint8_t>& v);
  // Outputs the op must write entirely: NaN (fill32 of 0x7fc00000) on both
  // sides, through each side's own fill32.
  Operand& poisoned(const Shape& shape, DType dtype = DType::Float32);

  // The kernel with the CPU backend on host operands, then with the device's
  // on device operands; waits for the device.
  void run(const Kernel& kernel);

  // After run(): compare `operand`'s two sides. Near judges floats by the
  // tolerance (0: equal values) and integers exactly; Bits compares words.
  void expect(const std::string& output, Operand& operand, double tolerance, Rule rule = Rule::Near);
  // Results the check read into host memory itself (copy_to_host).
  void expect_words(const std::string& output, std::vector<uint32_t> device, std::vector<uint32_t> cpu);

  // Reads back and compares every expected output.
  std::vector<Outcome> outcomes();

  static constexpr uint32_t kPoison = 0x7fc00000u;  // a quiet NaN

private:
  struct Expectation {
    std::string output;
    Operand* operand;
    double tolerance;
    Rule rule;
    std::vector<uint32_t> device_words, cpu_words;  // when operand is null
  };
  std::vector<uint32_t> read_words(Tensor& t);

  Device device_;
  Backend& device_backend_;
  Rng& rng_;
  std::deque<Operand> operands_;  // stable addresses for the references handed out
  std::vector<Expectation> expected_;
};

}  // namespace strata::gpu_check
