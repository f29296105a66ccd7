#pragma once
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/Tensor.h"
#include "nn/Variable.h"
#include "nn/json_fwd.h"

namespace strata::nn {

// A Keras-style layer. Shapes passed to build/output_shape exclude the batch
// dimension. Variables are created in build(), which Sequential calls once;
// the number of mirrored components is fixed when the layer is constructed
// (inside or outside a strategy's scope), never by the thread that builds it.
class Layer {
public:
  Layer();
  virtual ~Layer() = default;

  virtual std::string type() const = 0;
  virtual Shape output_shape(const Shape& input) const = 0;
  // The layer's settings as project-file JSON ({"type": ..., ...}).
  virtual Json config() const = 0;
  virtual Tensor call(const Tensor& x, bool training) = 0;
  // This layer's call and then `next`'s as one, where the pair fuses into
  // less work with the same results (a convolution's bias and relu applied
  // after its max pooling, on a quarter of the pixels); nullopt where it
  // does not. Sequential asks it of each pair of layers.
  virtual std::optional<Tensor> call_with_next(const Layer& /*next*/, const Tensor& /*x*/, bool /*training*/) {
    return std::nullopt;
  }

  void build(const Shape& input);
  bool built() const { return built_; }
  std::vector<Variable*> trainable_variables();
  int64_t param_count() const;
  // Variables that are state but not trained (batch-norm moving statistics).
  std::vector<Variable*> non_trainable_variables();
  // State that is neither weights nor config but must survive a checkpoint
  // for an exact resume (dropout's per-replica call counters); null if none.
  virtual Json extra_state() const;
  // Throws bad_input saying what is wrong (the caller names the file) and
  // then leaves the layer as it was.
  virtual void set_extra_state(const Json& state);
  // A captured step was replayed: the device did the step's work, the host
  // code did not run, so host-side mirrors of per-step state (dropout's call
  // counters) advance here as the eager call would have advanced them.
  virtual void count_replayed_step() {}
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

protected:
  // Creates the layer's variables; only called from build().
  virtual void create_variables(const Shape& input) { (void)input; }
  Variable* add_variable(const std::string& suffix, Tensor initial, bool trainable = true);
  uint64_t seed() const { return seed_; }

private:
  std::vector<std::unique_ptr<Variable>> variables_;
  std::vector<bool> trainable_;
  std::string name_;
  uint64_t seed_;
  std::vector<Device> devices_;  // of the strategy scope the layer was made in
  bool built_ = false;
};

using LayerPtr = std::shared_ptr<Layer>;

}  // namespace strata::nn
