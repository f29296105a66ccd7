#pragma once
#include <string>

#include "core/Tensor.h"

namespace strata::nn {

// Keras' loss reductions. Under a distribution strategy use None and
// compute_average_loss, so the loss is scaled by the *global* batch.
enum class Reduction { None, Sum, Mean };

class Loss {
public:
  explicit Loss(Reduction reduction) : reduction_(reduction) {}
  virtual ~Loss() = default;
  virtual std::string type() const = 0;
  // Per-example losses reduced as configured; recorded on the active tape.
  Tensor operator()(const Tensor& targets, const Tensor& predictions) const;
  // The sum of the per-example losses times `scale` (one value on the
  // predictions' device, 1 / global batch: this replica's share of the
  // global mean), as compute_average_loss of operator() with Reduction
  // None computes it, recorded as one op: differentiated as the tape's
  // target, its backward is the stored d average / d logits itself, where
  // the general path fills the seed, broadcasts it and scales each row.
  Tensor average(const Tensor& targets, const Tensor& predictions, const Tensor& scale) const;
  Reduction reduction() const { return reduction_; }

protected:
  // Per-example losses, shape (batch,), and d loss_i / d logits (the
  // logits' shape), computed but not recorded; `logits` the tensor they are
  // of (the predictions, or an op of them recorded on the tape).
  struct Parts {
    Tensor logits, loss, dlogits;
  };
  virtual Parts per_example(const Tensor& targets, const Tensor& predictions) const = 0;
  // average()'s values, not recorded: the scaled total (a scalar), and d
  // total / d logits (the stored d loss_i / d logits times the scale). By
  // default per_example, the sum and the scaling; a loss whose backend does
  // them in one call overrides it.
  struct Averaged {
    Tensor logits, total, dlogits;
  };
  virtual Averaged averaged(const Tensor& targets, const Tensor& predictions, const Tensor& scale) const;

private:
  Reduction reduction_;
};

// Integer class labels; predictions are logits (from_logits) or probabilities.
class SparseCategoricalCrossentropy final : public Loss {
public:
  explicit SparseCategoricalCrossentropy(bool from_logits = false, Reduction reduction = Reduction::Mean)
      : Loss(reduction), from_logits_(from_logits) {}
  std::string type() const override { return "sparse_categorical_crossentropy"; }

protected:
  Parts per_example(const Tensor& targets, const Tensor& predictions) const override;
  // On a device: Backend::sparse_softmax_xent_average.
  Averaged averaged(const Tensor& targets, const Tensor& predictions, const Tensor& scale) const override;

private:
  // The labels' checks; the logits (the predictions, or their logs recorded).
  Tensor checked_logits(const Tensor& targets, const Tensor& predictions) const;
  bool from_logits_;
};

// One-hot (or soft) float targets.
class CategoricalCrossentropy final : public Loss {
public:
  explicit CategoricalCrossentropy(bool from_logits = false, Reduction reduction = Reduction::Mean)
      : Loss(reduction), from_logits_(from_logits) {}
  std::string type() const override { return "categorical_crossentropy"; }

protected:
  Parts per_example(const Tensor& targets, const Tensor& predictions) const override;

private:
  bool from_logits_;
};

// Mean over the last axis of (target - prediction)^2, per example.
class MeanSquaredError final : public Loss {
public:
  explicit MeanSquaredError(Reduction reduction = Reduction::Mean) : Loss(reduction) {}
  std::string type() const override { return "mean_squared_error"; }

protected:
  Parts per_example(const Tensor& targets, const Tensor& predictions) const override;
};

// sum(per_example_loss) / global_batch_size: each replica's share of the
// global mean, so summing over replicas gives the mean over the global batch.
Tensor compute_average_loss(const Tensor& per_example_loss, int64_t global_batch_size);
// 1 / global batch size, the loss scale; bad_input unless the size is positive.
float inverse_global_batch(int64_t global_batch_size);
// The same with 1 / global batch size read from a device scalar (so a
// captured step can change it between replays without being rebuilt).
Tensor compute_average_loss(const Tensor& per_example_loss, const Tensor& inverse_global_batch);
// Sum of all elements times scale, as a recorded op; the result is a scalar
// on x's device (nothing is read back to the host).
Tensor sum_scaled(const Tensor& x, float scale);
Tensor sum_scaled(const Tensor& x, const Tensor& scale);

// The message for labels outside [0, classes), from a device's label error
// flag (see Backend::check_labels): `count` bad labels, the first `first`.
std::string label_error_message(float count, float first, int64_t classes);

}  // namespace strata::nn
