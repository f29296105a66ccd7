#pragma once
#include <cstdint>

#include "core/Tensor.h"

namespace strata {

// What the host needs from a replica's step, read in one copy at the step's
// one synchronisation: the loss, the correct-prediction count and the
// device's label error flag (a kernel cannot throw, so bad labels are
// reported here, as a bad_input error naming the label).
struct StepReadback {
  double loss = 0;
  int64_t correct = 0;
};

// loss: a scalar; logits (rows, classes) and int32 labels on the same device.
// Labels may be empty (no examples on this replica), then correct is 0.
StepReadback read_step(const Tensor& loss, const Tensor& logits, const Tensor& labels);

}  // namespace strata
