#pragma once
#include <functional>
#include <unordered_map>
#include <vector>

#include "core/Tensor.h"

namespace strata {

class Variable;

// Reverse-mode differentiation over recorded ops, as tf.GradientTape. A tape
// records on the thread that created it (each replica thread has its own)
// from construction until gradient() is called. Ops record one node each:
// their inputs, their output and a closure that maps the output's gradient to
// the inputs' gradients, computing only those that lead to a requested source.
class GradientTape {
public:
  using Backward = std::function<std::vector<Tensor>(const Tensor& grad_out, const std::vector<bool>& needed)>;
  // Called once per source, as soon as its gradient is final (every op that
  // read the source has passed it back), while the backward pass goes on:
  // a distribution strategy starts reducing it then (DDP's buckets). The
  // callee must not write the tensor.
  using Ready = std::function<void(size_t source_index, const Tensor& grad)>;

  GradientTape();
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  // d target / d source for each source (zeros where it does not depend on it).
  // Ends recording: a tape computes gradients once, as a non-persistent TF tape.
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Variable*>& sources, const Ready& ready = {});
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Tensor>& sources, const Ready& ready = {});

  // The innermost recording tape of this thread, or nullptr.
  static GradientTape* active();
  // `unit`, where given: the inputs' gradients when the output is the
  // differentiated target (its gradient all ones), without the seed's fill
  // or the general backward's work (a loss's last op: nn::Loss::average).
  using UnitBackward = std::function<std::vector<Tensor>(const std::vector<bool>& needed)>;
  void record(std::vector<Tensor> inputs, const Tensor& output, Backward backward, UnitBackward unit = {});

private:
  struct Node {
    std::vector<uint64_t> inputs;
    uint64_t output;
    Backward backward;
    UnitBackward unit;
  };
  std::vector<Node> nodes_;
  GradientTape* outer_;
  bool recording_ = true;
};

// Records `backward` for `output` on the active tape, if any.
void record_op(std::vector<Tensor> inputs, const Tensor& output, GradientTape::Backward backward,
               GradientTape::UnitBackward unit = {});

}  // namespace strata
