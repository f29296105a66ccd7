#include "nn/Metrics.h"

#include "backend/Backend.h"
#include "core/Error.h"

namespace strata::nn {

std::vector<int32_t> argmax_rows(const Tensor& predictions) {
  if (predictions.shape().rank() != 2) throw bad_input("argmax: predictions must be (batch, classes), got " + predictions.shape().str());
  const int64_t rows = predictions.shape()[0], cols = predictions.shape()[1];
  Tensor out = Tensor::empty(Shape{rows}, DType::Int32, predictions.device());
  backend_for(predictions.device()).argmax_rows(predictions.ptr(), rows, cols, out.int_ptr());
  const Tensor host = out.to(Device{});
  return std::vector<int32_t>(host.ints(), host.ints() + rows);
}

void check_predictions(const Tensor& predictions, const Tensor& labels) {
  if (predictions.shape().rank() != 2 || labels.numel() != predictions.shape()[0] || labels.dtype() != DType::Int32)
    throw bad_input("accuracy: predictions " + predictions.shape().str() + " do not match int32 labels " + labels.shape().str());
}

int64_t count_correct(const Tensor& predictions, const Tensor& labels) {
  if (labels.dtype() != DType::Int32) {
    std::vector<int32_t> ints;
    const Tensor host = labels.to(Device{});
    for (float v : host.span()) ints.push_back(static_cast<int32_t>(v));
    return count_correct(predictions, Tensor::from_ints(labels.shape(), ints, predictions.device()));
  }
  check_predictions(predictions, labels);
  Tensor count = Tensor::zeros(Shape{}, predictions.device());
  backend_for(predictions.device())
      .count_correct(predictions.ptr(), labels.int_ptr(), predictions.shape()[0], predictions.shape()[1], count.ptr());
  return static_cast<int64_t>(count.to(Device{}).item());
}

void SparseCategoricalAccuracy::update(const Tensor& labels, const Tensor& predictions) {
  add(count_correct(predictions, labels), predictions.shape()[0]);
}

}  // namespace strata::nn
