#pragma once
#include <string>

#include "CheckSection.h"

namespace strata::gpu_check {

// "multi": the checks and figures across several devices of the kind under
// test (MultiDeviceChecks.h): mirrored across GPUs, mixed placement and
// synchronised batch norm against one_device; all-reduce bus bandwidth, the
// all-reduce hidden behind the backward pass, throughput against one GPU.
// On a machine with one GPU it checks nothing and says so in its appendix;
// on sim it runs across two sim devices with small figures (the test suite).
class MultiDeviceSection final : public CheckSection {
public:
  std::string name() const override { return "multi"; }
  std::string title() const override {
    return "Several devices: mirrored across GPUs, mixed placement, synchronised batch norm, NCCL bandwidth";
  }
  std::vector<CheckRecord> run(const SectionContext& context) override;
  std::string appendix() const override { return appendix_; }

private:
  std::string appendix_;
};

}  // namespace strata::gpu_check
