#pragma once
// Runs op checks one at a time and turns their outcomes into records. A
// check that throws (strata::Error from the engine: a kernel refused its
// arguments, the device failed at the sync point) becomes a failed record
// with the message, and the next check runs: one broken kernel must not hide
// the rest.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "CheckRecord.h"
#include "OpCase.h"

namespace strata::gpu_check {

class OpHarness {
public:
  using Observer = std::function<void(const CheckRecord&)>;

  // Throws bad_input when `device` is the host or has no backend here.
  // `backend` replaces backend_for(device) as the one under test (a wrapper
  // with deliberate faults, in the tests); tensors still take the device's memory.
  OpHarness(const Device& device, uint64_t seed, Observer observer = {}, Backend* backend = nullptr);

  // One record per expected output of `body` (its shape description gets
  // " -> output" where the op has several), or one failed record.
  void check(const std::string& op, const std::string& shape, const std::function<void(OpCase&)>& body);

  const Device& device() const { return device_; }
  Backend& backend() const { return *backend_; }
  // The records so far, in order.
  const std::vector<CheckRecord>& records() const { return records_; }

private:
  void add(CheckRecord record);

  Device device_;
  Backend* backend_;
  Rng rng_;
  Observer observer_;
  std::vector<CheckRecord> records_;
};

}  // namespace strata::gpu_check
