#pragma once
#include <string>

#include "CheckSection.h"

namespace strata::gpu_check {

// "bench": training-step throughput of the Fashion-MNIST MLP (batch 128,
// 1024, 8192) and of the TF-tutorial CNN (batch 64, 256, 1024), Adam, on the
// device, beside the PyTorch peer's figures from the same machine (--peer:
// bench/pytorch_gpu_peer.py's JSON lines, eager and CUDA-graph-captured, TF32
// off and on); mirrored x2 sharing the device against one_device; what
// tracing costs. Figures, not checks: the tables are the appendix.
// "bench-tf32" (named only, in a process started with STRATA_TF32=1, since
// the backend chooses its arithmetic once per process): the CNN's table
// with TF32 against the peer's TF32 graph.
class BenchSection final : public CheckSection {
public:
  explicit BenchSection(bool tf32 = false) : tf32_(tf32) {}
  std::string name() const override { return tf32_ ? "bench-tf32" : "bench"; }
  std::string title() const override {
    return tf32_ ? "Training-step throughput with TF32 (STRATA_TF32=1) beside PyTorch's"
                 : "Training-step throughput beside PyTorch";
  }
  bool by_default() const override { return !tf32_; }
  std::vector<CheckRecord> run(const SectionContext& context) override;
  std::string appendix() const override { return table_; }

private:
  bool tf32_;
  std::string table_;
};

}  // namespace strata::gpu_check
