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
// with TF32 against the peer's TF32 graph. "bench-nondet" (the same, with
// STRATA_DETERMINISTIC=0): the CNN's float32 table with cuDNN's
// non-deterministic convolution algorithms in the race, as PyTorch's cuDNN
// runs by default, against the peer's float32 graph.
class BenchSection final : public CheckSection {
public:
  enum class Variant { Float32, Tf32, NonDeterministic };  // in the order of kVariants (the .cpp)
  explicit BenchSection(Variant variant = Variant::Float32) : variant_(variant) {}
  std::string name() const override;
  std::string title() const override;
  bool by_default() const override { return variant_ == Variant::Float32; }
  std::vector<CheckRecord> run(const SectionContext& context) override;
  std::string appendix() const override { return table_; }

private:
  Variant variant_;
  std::string table_;
};

}  // namespace strata::gpu_check
