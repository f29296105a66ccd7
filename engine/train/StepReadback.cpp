#include "train/StepReadback.h"

#include "backend/Backend.h"
#include "core/Error.h"
#include "nn/Loss.h"
#include "nn/Metrics.h"

namespace strata {

Tensor step_stats(const Device& device) { return Tensor::empty(Shape{4}, device); }

void gather_step(const Tensor& loss, const Tensor& logits, const Tensor& labels, Tensor& stats) {
  const Device device = loss.device();
  Backend& be = backend_for(device);
  // [loss, correct, bad labels, first bad label], gathered on the device.
  const bool counted = labels.defined() && labels.numel() > 0;
  if (counted) nn::check_predictions(logits, labels);
  const int64_t classes = logits.shape()[logits.shape().rank() - 1];
  be.gather_step_stats(loss.ptr(), counted ? logits.ptr() : nullptr, counted ? labels.int_ptr() : nullptr,
                       counted ? logits.shape()[0] : 0, classes, device.is_host() ? nullptr : be.label_error_flag(),
                       stats.ptr());
}

StepReadback read_stats(const Tensor& stats, int64_t classes) {
  const Tensor host = stats.to(Device{});
  return decode_stats(host.data(), classes);
}

StepReadback decode_stats(const float* v, int64_t classes) {
  if (v[2] > 0.0f) throw bad_input(nn::label_error_message(v[2], v[3], classes));
  return StepReadback{v[0], static_cast<int64_t>(v[1])};
}

StepReadback read_step(const Tensor& loss, const Tensor& logits, const Tensor& labels) {
  Tensor stats = step_stats(loss.device());
  gather_step(loss, logits, labels, stats);
  return read_stats(stats, logits.shape()[logits.shape().rank() - 1]);
}

}  // namespace strata
