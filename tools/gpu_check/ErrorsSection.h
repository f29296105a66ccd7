#pragma once
#include "CheckSection.h"

namespace strata::gpu_check {

// "errors": what a user sees when a device cannot do what was asked (#14):
// a device index the machine does not have, asked for directly and through
// a training run (a bad-input error naming it and the devices there are),
// and an allocation larger than the device's memory (an error naming the
// device and the size, after which the device still computes correctly).
class ErrorsSection final : public CheckSection {
public:
  std::string name() const override { return "errors"; }
  std::string title() const override { return "Errors: a device that does not exist, device memory exhausted"; }
  std::vector<CheckRecord> run(const SectionContext& context) override;
};

}  // namespace strata::gpu_check
