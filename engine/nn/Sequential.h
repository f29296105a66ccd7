#pragma once
#include <initializer_list>
#include <memory>
#include <atomic>
#include <mutex>
#include <vector>

#include "nn/Layer.h"

namespace strata {
class GradientTape;
}

namespace strata::nn {

struct LayerSummary {
  std::string name, type;
  Shape output_shape;  // per example
  int64_t params = 0;
};

// A stack of layers. Builds once, on the first call or an explicit build():
// the first replica to arrive builds under a lock, so replicas never race to
// create variables.
class Sequential {
public:
  Sequential() = default;
  Sequential(std::initializer_list<LayerPtr> layers);
  explicit Sequential(std::vector<LayerPtr> layers);

  void add(LayerPtr layer);
  void build(const Shape& input_shape);  // per example, without the batch dimension
  bool built() const { return build_->built.load(std::memory_order_acquire); }
  const Shape& input_shape() const { return input_shape_; }

  Tensor operator()(const Tensor& x, bool training = false);
  // The tape argument documents that the call is recorded (on the thread's
  // active tape, which it must be).
  Tensor operator()(const Tensor& x, bool training, GradientTape& tape);

  std::vector<Variable*> trainable_variables();
  std::vector<Variable*> variables();  // trainable then non-trainable
  const std::vector<LayerPtr>& layers() const { return layers_; }
  // See Layer::count_replayed_step.
  void count_replayed_step() {
    for (auto& l : layers_) l->count_replayed_step();
  }
  int64_t param_count() const;
  // Per-layer output shapes and parameter counts; throws bad_input naming the
  // layer when shapes do not fit.
  std::vector<LayerSummary> summary(const Shape& input_shape) const;

private:
  std::vector<LayerPtr> layers_;
  // Built once: the replica that builds publishes `built` with release order
  // after the variables exist, and a replica that sees it (acquire) sees them
  // too; a plain bool let a replica see "built" before the weights.
  // Behind a pointer so a Sequential can be moved (before it is used).
  struct BuildState {
    std::mutex mutex;
    std::atomic<bool> built{false};
  };
  std::unique_ptr<BuildState> build_ = std::make_unique<BuildState>();
  Shape input_shape_;
};

}  // namespace strata::nn
