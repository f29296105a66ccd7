#pragma once
#include "CheckSection.h"

namespace strata::gpu_check {

// "ops": every Backend operation on the device against the CPU backend (BackendComparison).
class OpsSection final : public CheckSection {
public:
  std::string name() const override { return "ops"; }
  std::string title() const override { return "Backend operations against the CPU backend"; }
  std::vector<CheckRecord> run(const SectionContext& context) override;
};

}  // namespace strata::gpu_check
