#include "nn/Metrics.h"

#include "core/Error.h"

namespace strata::nn {

std::vector<int32_t> argmax_rows(const Tensor& predictions) {
  if (predictions.shape().rank() != 2) throw bad_input("argmax: predictions must be (batch, classes), got " + predictions.shape().str());
  const int64_t rows = predictions.shape()[0], cols = predictions.shape()[1];
  const float* p = predictions.data();
  std::vector<int32_t> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < cols; ++c)
      if (p[r * cols + c] > p[r * cols + best]) best = c;
    out[static_cast<size_t>(r)] = static_cast<int32_t>(best);
  }
  return out;
}

int64_t count_correct(const Tensor& predictions, const Tensor& labels) {
  if (predictions.shape().rank() != 2 || labels.numel() != predictions.shape()[0])
    throw bad_input("accuracy: predictions " + predictions.shape().str() + " do not match labels " + labels.shape().str());
  const auto pred = argmax_rows(predictions);
  int64_t correct = 0;
  for (size_t r = 0; r < pred.size(); ++r) {
    const int64_t label = labels.dtype() == DType::Int32 ? labels.ints()[r] : static_cast<int64_t>(labels.data()[r]);
    correct += pred[r] == label;
  }
  return correct;
}

void SparseCategoricalAccuracy::update(const Tensor& labels, const Tensor& predictions) {
  add(count_correct(predictions, labels), predictions.shape()[0]);
}

}  // namespace strata::nn
