#include "nn/Loss.h"

#include "backend/Backend.h"
#include "core/Error.h"
#include "nn/GradientTape.h"

namespace strata::nn {

namespace {
// Keras clips probabilities to [eps, 1 - eps] before taking logs.
constexpr float kProbEpsilon = 1e-7f;

void check_batch(const Tensor& targets, const Tensor& predictions, const char* what) {
  if (predictions.shape().rank() != 2)
    throw bad_input(std::string(what) + ": predictions must be (batch, classes), got " + predictions.shape().str());
  if (targets.shape().rank() < 1 || targets.shape()[0] != predictions.shape()[0])
    throw bad_input(std::string(what) + ": " + std::to_string(targets.shape().rank() ? targets.shape()[0] : 0) +
                    " targets for " + std::to_string(predictions.shape()[0]) + " predictions");
}

// log(clamp(p)) as a recorded op: turns probabilities into logits whose
// softmax is p / sum(p), which is exactly Keras' normalise-then-log.
Tensor log_probabilities(const Tensor& p) {
  Tensor y = Tensor::empty(p.shape());
  backend_for(p.device()).log_clamp(p.numel(), p.data(), kProbEpsilon, y.data());
  record_op({p}, y, [p](const Tensor& g, const std::vector<bool>&) {
    Tensor dx = Tensor::empty(p.shape());
    backend_for(g.device()).log_clamp_backward(p.numel(), p.data(), kProbEpsilon, g.data(), dx.data());
    return std::vector<Tensor>{dx};
  });
  return y;
}

// Per-example loss with a stored d loss_i / d logits; the backward scales each
// row by the incoming per-example gradient.
Tensor per_example_with_dlogits(const Tensor& logits, Tensor loss, Tensor dlogits) {
  const int64_t rows = logits.shape()[0], cols = logits.shape()[1];
  record_op({logits}, loss, [dlogits, rows, cols](const Tensor& g, const std::vector<bool>&) {
    Tensor dx = Tensor::empty(dlogits.shape());
    backend_for(g.device()).scale_rows(dlogits.data(), g.data(), rows, cols, dx.data());
    return std::vector<Tensor>{dx};
  });
  return loss;
}
}  // namespace

Tensor Loss::operator()(const Tensor& targets, const Tensor& predictions) const {
  Tensor per = per_example(targets, predictions);
  switch (reduction_) {
    case Reduction::None: return per;
    case Reduction::Sum: return sum_scaled(per, 1.0f);
    case Reduction::Mean: return sum_scaled(per, per.numel() ? 1.0f / static_cast<float>(per.numel()) : 0.0f);
  }
  return per;
}

Tensor SparseCategoricalCrossentropy::per_example(const Tensor& targets, const Tensor& predictions) const {
  check_batch(targets, predictions, "SparseCategoricalCrossentropy");
  if (targets.dtype() != DType::Int32 || targets.shape().rank() != 1)
    throw bad_input("SparseCategoricalCrossentropy: labels must be int32 of shape (batch,), got " +
                    dtype_name(targets.dtype()) + " " + targets.shape().str());
  Tensor logits = from_logits_ ? predictions : log_probabilities(predictions);
  const int64_t rows = logits.shape()[0], cols = logits.shape()[1];
  Tensor loss = Tensor::empty(Shape{rows});
  Tensor dlogits = Tensor::empty(logits.shape());
  backend_for(logits.device()).sparse_softmax_xent(logits.data(), targets.ints(), rows, cols, loss.data(), dlogits.data());
  return per_example_with_dlogits(logits, loss, dlogits);
}

Tensor CategoricalCrossentropy::per_example(const Tensor& targets, const Tensor& predictions) const {
  check_batch(targets, predictions, "CategoricalCrossentropy");
  if (targets.shape() != predictions.shape())
    throw bad_input("CategoricalCrossentropy: targets " + targets.shape().str() + " vs predictions " +
                    predictions.shape().str());
  Tensor logits = from_logits_ ? predictions : log_probabilities(predictions);
  const int64_t rows = logits.shape()[0], cols = logits.shape()[1];
  Tensor loss = Tensor::empty(Shape{rows});
  Tensor dlogits = Tensor::empty(logits.shape());
  backend_for(logits.device()).softmax_xent(logits.data(), targets.data(), rows, cols, loss.data(), dlogits.data());
  return per_example_with_dlogits(logits, loss, dlogits);
}

Tensor MeanSquaredError::per_example(const Tensor& targets, const Tensor& predictions) const {
  check_batch(targets, predictions, "MeanSquaredError");
  if (targets.numel() != predictions.numel())
    throw bad_input("MeanSquaredError: targets " + targets.shape().str() + " vs predictions " + predictions.shape().str());
  Backend& be = backend_for(predictions.device());
  const int64_t rows = predictions.shape()[0], cols = predictions.shape()[1];
  Tensor diff = Tensor::empty(predictions.shape());
  be.axpby(diff.numel(), 1.0f, predictions.data(), 0.0f, diff.data());
  be.axpby(diff.numel(), -1.0f, targets.data(), 1.0f, diff.data());
  Tensor sq = Tensor::empty(diff.shape());
  be.mul(sq.numel(), diff.data(), diff.data(), sq.data());
  // Row means through a product with a column of 1/cols: no extra kernel.
  Tensor inv = Tensor::full(Shape{cols, 1}, 1.0f / static_cast<float>(cols));
  Tensor loss = Tensor::empty(Shape{rows});
  be.gemm(false, false, rows, 1, cols, 1.0f, sq.data(), inv.data(), 0.0f, loss.data());
  Tensor dloss = Tensor::empty(diff.shape());
  be.axpby(diff.numel(), 2.0f / static_cast<float>(cols), diff.data(), 0.0f, dloss.data());
  return per_example_with_dlogits(predictions, loss, dloss);
}

Tensor sum_scaled(const Tensor& x, float scale) {
  Backend& be = backend_for(x.device());
  Tensor y = Tensor::scalar(static_cast<float>(be.sum(x.numel(), x.data()) * scale));
  const Shape shape = x.shape();
  record_op({x}, y, [shape, scale](const Tensor& g, const std::vector<bool>&) {
    return std::vector<Tensor>{Tensor::full(shape, g.item() * scale)};
  });
  return y;
}

Tensor compute_average_loss(const Tensor& per_example_loss, int64_t global_batch_size) {
  if (global_batch_size <= 0)
    throw bad_input("compute_average_loss: global batch size must be positive, got " + std::to_string(global_batch_size));
  return sum_scaled(per_example_loss, 1.0f / static_cast<float>(global_batch_size));
}

}  // namespace strata::nn
