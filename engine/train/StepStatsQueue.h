#pragma once
#include <cstdint>
#include <vector>

#include "core/DeviceMemory.h"
#include "core/Tensor.h"
#include "train/StepReadback.h"

namespace strata {

// The figures of training steps queued on accelerators, read back one
// step late: while the devices run step k the host reads step k - 1's
// figures and prepares step k + 1's batch, so a device never idles between
// steps waiting for the host (the host's per-step work hides behind the step
// it has just queued). Each push queues copies of the replicas' stats
// tensors (step_stats()) behind each replica's work on its own device into
// page-locked host memory, so the copies are as asynchronous as the step;
// two slots, one filling while the other is read.
class StepStatsQueue {
public:
  // `devices`: each replica's (replicas may share one: a step graph's).
  explicit StepStatsQueue(std::vector<Device> devices);
  // Waits for copies still in flight: they write into memory this owns.
  ~StepStatsQueue();
  StepStatsQueue(const StepStatsQueue&) = delete;
  StepStatsQueue& operator=(const StepStatsQueue&) = delete;

  // At most two steps are pending; push a third only after a pop.
  void push(const std::vector<Tensor>& stats);
  // Waits for the oldest pushed step's figures, one per replica; bad_input
  // when the step met a label outside the classes.
  std::vector<StepReadback> pop(int64_t classes);

private:
  int replicas() const { return static_cast<int>(devices_.size()); }
  float* slot(int i) { return host_ + static_cast<size_t>(i) * devices_.size() * 4; }
  void wait(int slot);

  std::vector<Device> devices_;
  std::vector<Device> distinct_;  // the devices, each once
  size_t bytes_ = 0;
  float* host_ = nullptr;          // two slots of replicas × 4 floats, page-aligned and page-locked
  std::vector<EventPtr> done_[2];  // per slot, one event per distinct device
  int first_ = 0;                  // the oldest pending slot
  int pending_ = 0;                // slots pushed and not yet popped
};

}  // namespace strata
