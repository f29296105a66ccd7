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

// read_step in its two halves, for a step captured as a graph: gather_step
// queues the device's part into `stats` (4 floats on the loss's device, made
// by step_stats()) and can be captured; read_stats waits and reads them.
Tensor step_stats(const Device& device);
void gather_step(const Tensor& loss, const Tensor& logits, const Tensor& labels, Tensor& stats);
StepReadback read_stats(const Tensor& stats, int64_t classes);
// The same from the 4 floats of `stats` already on the host.
StepReadback decode_stats(const float* stats, int64_t classes);

}  // namespace strata
