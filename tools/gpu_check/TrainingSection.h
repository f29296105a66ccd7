#pragma once
#include "CheckSection.h"

namespace strata::gpu_check {

// "training": whole training steps on the device against the CPU and against
// themselves (TrainingChecks.h): one step, 50 SGD steps, graph replay against
// op-by-op, mirrored x2 on the one device against one_device.
class TrainingSection final : public CheckSection {
public:
  std::string name() const override { return "training"; }
  std::string title() const override { return "Training steps against the CPU, graph replay, mirrored replicas sharing the device (NCCL on a GPU)"; }
  std::vector<CheckRecord> run(const SectionContext& context) override;
};

// "mnist": the Fashion-MNIST MLP example trained on the device as the project
// says, and the TF-tutorial CNN for 2 epochs against the CPU's accuracy.
class MnistSection final : public CheckSection {
public:
  std::string name() const override { return "mnist"; }
  std::string title() const override { return "Fashion-MNIST on the device: MLP example (test accuracy >= 0.88), CNN 2 epochs against the CPU"; }
  std::vector<CheckRecord> run(const SectionContext& context) override;
};

}  // namespace strata::gpu_check
