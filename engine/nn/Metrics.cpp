#include "nn/Metrics.h"

#include "core/Error.h"

namespace strata::nn {

int64_t count_correct(const Tensor& predictions, const Tensor& labels) {
  if (predictions.shape().rank() != 2 || labels.numel() != predictions.shape()[0])
    throw bad_input("accuracy: predictions " + predictions.shape().str() + " do not match labels " + labels.shape().str());
  const int64_t rows = predictions.shape()[0], cols = predictions.shape()[1];
  const float* p = predictions.data();
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < cols; ++c)
      if (p[r * cols + c] > p[r * cols + best]) best = c;
    const int64_t label = labels.dtype() == DType::Int32 ? labels.ints()[r] : static_cast<int64_t>(labels.data()[r]);
    correct += best == label;
  }
  return correct;
}

void SparseCategoricalAccuracy::update(const Tensor& labels, const Tensor& predictions) {
  add(count_correct(predictions, labels), predictions.shape()[0]);
}

}  // namespace strata::nn
