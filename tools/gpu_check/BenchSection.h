#pragma once
#include <string>

#include "CheckSection.h"

namespace strata::gpu_check {

// "bench": training-step throughput of the Fashion-MNIST MLP (batch 128,
// 1024, 8192) and of the TF-tutorial CNN (batch 64, 256, 1024), Adam, on the
// device, beside the PyTorch peer's figures from the same machine (--peer:
// bench/pytorch_gpu_peer.py's JSON lines, eager and CUDA-graph-captured, TF32
// off and on). Figures, not checks: the tables are the appendix.
class BenchSection final : public CheckSection {
public:
  std::string name() const override { return "bench"; }
  std::string title() const override { return "Training-step throughput beside PyTorch"; }
  std::vector<CheckRecord> run(const SectionContext& context) override;
  std::string appendix() const override { return table_; }

private:
  std::string table_;
};

}  // namespace strata::gpu_check
