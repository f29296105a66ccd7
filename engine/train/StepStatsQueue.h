#pragma once
#include <cstdint>
#include <vector>

#include "core/DeviceMemory.h"
#include "core/Tensor.h"
#include "train/StepReadback.h"

namespace strata {

// The figures of training steps queued on an accelerator, read back one
// step late: while the device runs step k the host reads step k - 1's
// figures and prepares step k + 1's batch, so the device never idles
// between steps waiting for the host (the host's per-step work hides behind
// the step it has just queued). Each push queues copies of the replicas'
// stats tensors (step_stats()) behind the step's work into page-locked host
// memory, so the copies are as asynchronous as the step; two slots, one
// filling while the other is read.
class StepStatsQueue {
public:
  StepStatsQueue(const Device& device, int replicas);
  // Waits for a copy still in flight: it writes into memory this owns.
  ~StepStatsQueue();
  StepStatsQueue(const StepStatsQueue&) = delete;
  StepStatsQueue& operator=(const StepStatsQueue&) = delete;

  // At most two steps are pending; push a third only after a pop.
  void push(const std::vector<Tensor>& stats);
  // Waits for the oldest pushed step's figures, one per replica; bad_input
  // when the step met a label outside the classes.
  std::vector<StepReadback> pop(int64_t classes);

private:
  float* slot(int i) { return host_ + static_cast<size_t>(i) * static_cast<size_t>(replicas_) * 4; }

  Device device_;
  int replicas_;
  size_t bytes_ = 0;
  float* host_ = nullptr;  // two slots of replicas × 4 floats, page-aligned and page-locked
  EventPtr done_[2];
  int first_ = 0;    // the oldest pending slot
  int pending_ = 0;  // slots pushed and not yet popped
};

}  // namespace strata
