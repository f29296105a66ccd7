#pragma once
#include "CheckSection.h"

namespace strata::gpu_check {

// "failures": a replica failing mid-run beside step graphs that captured the
// collectives (RunConfig::fail_replica). Last of all the sections: a hang
// is this section's failure, and the run it leaves on its thread may still
// hold the device, which would distort every later section.
class FailuresSection final : public CheckSection {
public:
  // `limit`: seconds each of its two runs has to end (a pass takes seconds;
  // the script's own limit must not come first).
  explicit FailuresSection(double limit = 45) : limit_(limit) {}
  std::string name() const override { return "failures"; }
  std::string title() const override { return "Failures: a replica failing beside captured collectives ends the run"; }
  std::vector<CheckRecord> run(const SectionContext& context) override;
  bool left_work_running() const override { return hung_; }

private:
  double limit_;
  bool hung_ = false;
};

}  // namespace strata::gpu_check
