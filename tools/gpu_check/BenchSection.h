#pragma once
#include <string>

#include "CheckSection.h"

namespace strata::gpu_check {

// "bench": training-step throughput of the Fashion-MNIST MLP (Adam) at batch
// 128, 1024 and 8192 on the device, beside the PyTorch peer's figures from
// the same machine (--peer: bench/pytorch_gpu_mlp.py's JSON lines, eager and
// CUDA-graph-captured). Figures, not checks: the table is the appendix.
class BenchSection final : public CheckSection {
public:
  std::string name() const override { return "bench"; }
  std::string title() const override { return "MLP training-step throughput beside PyTorch"; }
  std::vector<CheckRecord> run(const SectionContext& context) override;
  std::string appendix() const override { return table_; }

private:
  std::string table_;
};

}  // namespace strata::gpu_check
