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
  Tensor y = Tensor::empty(p.shape(), p.device());
  backend_for(p.device()).log_clamp(p.numel(), p.ptr(), kProbEpsilon, y.ptr());
  record_op({p}, y, [p](const Tensor& g, const std::vector<bool>&) {
    Tensor dx = Tensor::empty(p.shape(), g.device());
    backend_for(g.device()).log_clamp_backward(p.numel(), p.ptr(), kProbEpsilon, g.ptr(), dx.ptr());
    return std::vector<Tensor>{dx};
  });
  return y;
}

// The scale as one value on x's device, else an error naming `what`.
void check_scale(const Tensor& x, const Tensor& scale, const char* what) {
  if (scale.numel() != 1 || !scale.device().same_memory(x.device()))
    throw runtime_error(std::string(what) + ": the scale must be one value on " + x.device().str());
}

// scale[0] * sum(x) as a scalar on x's device, not recorded (sum_scaled's
// and Loss::average's forward); `what` names the caller in its error.
Tensor scaled_total(const Tensor& x, const Tensor& scale, const char* what) {
  check_scale(x, scale, what);
  Tensor y = Tensor::empty(Shape{}, x.device());
  backend_for(x.device()).scaled_sum(x.numel(), x.ptr(), scale.ptr(), y.ptr());
  return y;
}

}  // namespace

Tensor Loss::operator()(const Tensor& targets, const Tensor& predictions) const {
  // Per-example losses with the stored d loss_i / d logits; the backward
  // scales each row by the incoming per-example gradient.
  const Parts parts = per_example(targets, predictions);
  const int64_t rows = parts.dlogits.shape()[0], cols = parts.dlogits.shape()[1];
  record_op({parts.logits}, parts.loss, [dlogits = parts.dlogits, rows, cols](const Tensor& g, const std::vector<bool>&) {
    Tensor dx = Tensor::empty(dlogits.shape(), g.device());
    backend_for(g.device()).scale_rows(dlogits.ptr(), g.ptr(), rows, cols, dx.ptr());
    return std::vector<Tensor>{dx};
  });
  const Tensor& per = parts.loss;
  switch (reduction_) {
    case Reduction::None: return per;
    case Reduction::Sum: return sum_scaled(per, 1.0f);
    case Reduction::Mean: return sum_scaled(per, per.numel() ? 1.0f / static_cast<float>(per.numel()) : 0.0f);
  }
  return per;
}

Loss::Averaged Loss::averaged(const Tensor& targets, const Tensor& predictions, const Tensor& scale) const {
  Parts parts = per_example(targets, predictions);
  Tensor total = scaled_total(parts.loss, scale, "Loss::average");
  backend_for(parts.dlogits.device())
      .scale_rows(parts.dlogits.ptr(), scale.ptr(), 1, parts.dlogits.numel(), parts.dlogits.ptr());
  return {parts.logits, total, parts.dlogits};
}

Tensor Loss::average(const Tensor& targets, const Tensor& predictions, const Tensor& scale) const {
  const Averaged a = averaged(targets, predictions, scale);
  record_op(
      {a.logits}, a.total,
      [d = a.dlogits](const Tensor& g, const std::vector<bool>&) {
        // g: the incoming gradient of the scalar total.
        Tensor dx = Tensor::empty(d.shape(), g.device());
        backend_for(g.device()).scale_rows(d.ptr(), g.ptr(), 1, d.numel(), dx.ptr());
        return std::vector<Tensor>{dx};
      },
      [d = a.dlogits](const std::vector<bool>&) { return std::vector<Tensor>{d}; });
  return a.total;
}

Tensor SparseCategoricalCrossentropy::checked_logits(const Tensor& targets, const Tensor& predictions) const {
  check_batch(targets, predictions, "SparseCategoricalCrossentropy");
  if (targets.dtype() != DType::Int32 || targets.shape().rank() != 1)
    throw bad_input("SparseCategoricalCrossentropy: labels must be int32 of shape (batch,), got " +
                    dtype_name(targets.dtype()) + " " + targets.shape().str());
  if (!targets.device().same_memory(predictions.device()))
    throw bad_input("SparseCategoricalCrossentropy: labels on " + targets.device().str() + ", predictions on " +
                    predictions.device().str());
  return from_logits_ ? predictions : log_probabilities(predictions);
}

Loss::Parts SparseCategoricalCrossentropy::per_example(const Tensor& targets, const Tensor& predictions) const {
  Tensor logits = checked_logits(targets, predictions);
  const int64_t rows = logits.shape()[0], cols = logits.shape()[1];
  Backend& be = backend_for(logits.device());
  // A device cannot throw: bad labels raise its error flag, which the
  // trainer reads at its sync point. On the host they are reported here.
  float host_flag[2] = {0.0f, 0.0f};
  be.check_labels(targets.int_ptr(), rows, cols, logits.on_host() ? host_flag : be.label_error_flag());
  if (host_flag[0] > 0.0f) throw bad_input(label_error_message(host_flag[0], host_flag[1], cols));
  Tensor loss = Tensor::empty(Shape{rows}, logits.device());
  Tensor dlogits = Tensor::empty(logits.shape(), logits.device());
  be.sparse_softmax_xent(logits.ptr(), targets.int_ptr(), rows, cols, loss.ptr(), dlogits.ptr());
  return {logits, loss, dlogits};
}

Loss::Averaged SparseCategoricalCrossentropy::averaged(const Tensor& targets, const Tensor& predictions,
                                                       const Tensor& scale) const {
  // On the host bad labels are an error here and now (per_example).
  if (predictions.on_host()) return Loss::averaged(targets, predictions, scale);
  Tensor logits = checked_logits(targets, predictions);
  check_scale(logits, scale, "Loss::average");
  const int64_t rows = logits.shape()[0], cols = logits.shape()[1];
  Backend& be = backend_for(logits.device());
  Tensor loss = Tensor::empty(Shape{rows}, logits.device());
  Tensor dlogits = Tensor::empty(logits.shape(), logits.device());
  Tensor total = Tensor::empty(Shape{}, logits.device());
  be.sparse_softmax_xent_average(logits.ptr(), targets.int_ptr(), rows, cols, scale.ptr(), be.label_error_flag(), loss.ptr(),
                                 dlogits.ptr(), total.ptr());
  return {logits, total, dlogits};
}

Loss::Parts CategoricalCrossentropy::per_example(const Tensor& targets, const Tensor& predictions) const {
  check_batch(targets, predictions, "CategoricalCrossentropy");
  if (targets.shape() != predictions.shape())
    throw bad_input("CategoricalCrossentropy: targets " + targets.shape().str() + " vs predictions " +
                    predictions.shape().str());
  Tensor logits = from_logits_ ? predictions : log_probabilities(predictions);
  const int64_t rows = logits.shape()[0], cols = logits.shape()[1];
  Tensor loss = Tensor::empty(Shape{rows}, logits.device());
  Tensor dlogits = Tensor::empty(logits.shape(), logits.device());
  backend_for(logits.device()).softmax_xent(logits.ptr(), targets.ptr(), rows, cols, loss.ptr(), dlogits.ptr());
  return {logits, loss, dlogits};
}

Loss::Parts MeanSquaredError::per_example(const Tensor& targets, const Tensor& predictions) const {
  check_batch(targets, predictions, "MeanSquaredError");
  if (targets.numel() != predictions.numel())
    throw bad_input("MeanSquaredError: targets " + targets.shape().str() + " vs predictions " + predictions.shape().str());
  Backend& be = backend_for(predictions.device());
  const int64_t rows = predictions.shape()[0], cols = predictions.shape()[1];
  const Device dev = predictions.device();
  Tensor diff = Tensor::empty(predictions.shape(), dev);
  be.axpby(diff.numel(), 1.0f, predictions.ptr(), 0.0f, diff.ptr());
  be.axpby(diff.numel(), -1.0f, targets.ptr(), 1.0f, diff.ptr());
  Tensor sq = Tensor::empty(diff.shape(), dev);
  be.mul(sq.numel(), diff.ptr(), diff.ptr(), sq.ptr());
  // Row means through a product with a column of 1/cols: no extra kernel.
  Tensor inv = Tensor::full(Shape{cols, 1}, 1.0f / static_cast<float>(cols), dev);
  Tensor loss = Tensor::empty(Shape{rows}, dev);
  be.gemm(false, false, rows, 1, cols, 1.0f, sq.ptr(), inv.ptr(), 0.0f, loss.ptr());
  Tensor dloss = Tensor::empty(diff.shape(), dev);
  be.axpby(diff.numel(), 2.0f / static_cast<float>(cols), diff.ptr(), 0.0f, dloss.ptr());
  return {predictions, loss, dloss};
}

Tensor sum_scaled(const Tensor& x, float scale) { return sum_scaled(x, Tensor::scalar(scale, x.device())); }

Tensor sum_scaled(const Tensor& x, const Tensor& scale) {
  Tensor y = scaled_total(x, scale, "sum_scaled");
  const Shape shape = x.shape();
  record_op({x}, y, [shape, scale](const Tensor& g, const std::vector<bool>&) {
    Tensor dx = Tensor::empty(shape, g.device());
    backend_for(g.device()).broadcast_scaled(dx.numel(), g.ptr(), scale.ptr(), dx.ptr());
    return std::vector<Tensor>{dx};
  });
  return y;
}

float inverse_global_batch(int64_t global_batch_size) {
  if (global_batch_size <= 0)
    throw bad_input("compute_average_loss: global batch size must be positive, got " + std::to_string(global_batch_size));
  return 1.0f / static_cast<float>(global_batch_size);
}

Tensor compute_average_loss(const Tensor& per_example_loss, int64_t global_batch_size) {
  return sum_scaled(per_example_loss, inverse_global_batch(global_batch_size));
}

Tensor compute_average_loss(const Tensor& per_example_loss, const Tensor& inverse_global_batch) {
  return sum_scaled(per_example_loss, inverse_global_batch);
}

std::string label_error_message(float count, float first, int64_t classes) {
  std::string msg = "label " + std::to_string(static_cast<int64_t>(first)) + " out of range for " +
                    std::to_string(classes) + " classes";
  if (count > 1.0f) msg += " (" + std::to_string(static_cast<int64_t>(count)) + " such labels)";
  return msg;
}

}  // namespace strata::nn
