#include "train/StepReadback.h"

#include "backend/Backend.h"
#include "core/Error.h"
#include "nn/Loss.h"
#include "nn/Metrics.h"

namespace strata {

StepReadback read_step(const Tensor& loss, const Tensor& logits, const Tensor& labels) {
  const Device device = loss.device();
  Backend& be = backend_for(device);
  // [loss, correct, bad labels, first bad label], gathered on the device.
  Tensor stats = Tensor::zeros(Shape{4}, device);
  be.copy(stats.ptr(), loss.ptr(), sizeof(float));
  if (labels.defined() && labels.numel() > 0) nn::count_correct_into(logits, labels, stats.ptr() + 1);
  if (!device.is_host()) {
    be.copy(stats.ptr() + 2, be.label_error_flag(), 2 * sizeof(float));
    be.fill32(be.label_error_flag(), 2, 0);
  }
  const Tensor host = stats.to(Device{});
  const float* v = host.data();
  if (v[2] > 0.0f) throw bad_input(nn::label_error_message(v[2], v[3], logits.shape()[logits.shape().rank() - 1]));
  return StepReadback{v[0], static_cast<int64_t>(v[1])};
}

}  // namespace strata
