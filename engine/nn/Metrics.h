#pragma once
#include <cstdint>
#include <vector>

#include "core/Tensor.h"

namespace strata::nn {

// Arg-max of each row of a (batch, classes) tensor on any device, on the host
// (waits for the device).
std::vector<int32_t> argmax_rows(const Tensor& predictions);

// Number of rows whose arg-max equals the label (waits for the device).
int64_t count_correct(const Tensor& predictions, const Tensor& labels);
// Throws unless predictions are (batch, classes) and labels (batch) int32.
void check_predictions(const Tensor& predictions, const Tensor& labels);

// Running sparse categorical accuracy, as keras.metrics.SparseCategoricalAccuracy.
class SparseCategoricalAccuracy {
public:
  void update(const Tensor& labels, const Tensor& predictions);
  void add(int64_t correct, int64_t total) {
    correct_ += correct;
    total_ += total;
  }
  double result() const { return total_ ? static_cast<double>(correct_) / static_cast<double>(total_) : 0.0; }
  void reset() { correct_ = total_ = 0; }
  int64_t correct() const { return correct_; }
  int64_t total() const { return total_; }

private:
  int64_t correct_ = 0, total_ = 0;
};

}  // namespace strata::nn
