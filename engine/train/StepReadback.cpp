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
  be.fill32(stats.ptr(), 4, 0);
  be.copy(stats.ptr(), loss.ptr(), sizeof(float));
  if (labels.defined() && labels.numel() > 0) nn::count_correct_into(logits, labels, stats.ptr() + 1);
  if (!device.is_host()) {
    be.copy(stats.ptr() + 2, be.label_error_flag(), 2 * sizeof(float));
    be.fill32(be.label_error_flag(), 2, 0);
  }
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
