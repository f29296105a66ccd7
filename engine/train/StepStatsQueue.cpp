#include "train/StepStatsQueue.h"

#include <cstdlib>
#include <new>

#include "core/Error.h"

namespace strata {

StepStatsQueue::StepStatsQueue(const Device& device, int replicas) : device_(device), replicas_(replicas) {
  // Whole pages of their own: page-locking registers pages, and another
  // buffer sharing one would be registered twice (an error on CUDA).
  constexpr size_t page = 4096;
  bytes_ = (2 * static_cast<size_t>(replicas) * 4 * sizeof(float) + page - 1) / page * page;
  host_ = static_cast<float*>(std::aligned_alloc(page, bytes_));
  if (!host_) throw std::bad_alloc();
  try {
    device_memory(device_).pin_host_memory(host_, bytes_);
  } catch (...) {
    std::free(host_);
    throw;
  }
}

StepStatsQueue::~StepStatsQueue() {
  DeviceMemory& memory = device_memory(device_);
  for (int i = 0; i < pending_; ++i) {
    try {
      memory.wait_host(done_[(first_ + i) % 2]);
    } catch (...) {
      // The run already failed (or is failing) for this reason; the memory
      // must outlive the copy all the same, so the wait is still made.
    }
  }
  memory.unpin_host_memory(host_);
  std::free(host_);
}

void StepStatsQueue::push(const std::vector<Tensor>& stats) {
  if (pending_ == 2) throw runtime_error("StepStatsQueue: a third step pushed before the oldest was read");
  if (static_cast<int>(stats.size()) != replicas_)
    throw runtime_error("StepStatsQueue: " + std::to_string(stats.size()) + " stats for " + std::to_string(replicas_) +
                        " replicas");
  const int s = (first_ + pending_) % 2;
  DeviceMemory& memory = device_memory(device_);
  for (int r = 0; r < replicas_; ++r)
    memory.copy_to_host(slot(s) + 4 * r, stats[static_cast<size_t>(r)].ptr(), 4 * sizeof(float));
  done_[s] = memory.record_event();
  ++pending_;
}

std::vector<StepReadback> StepStatsQueue::pop(int64_t classes) {
  if (pending_ == 0) throw runtime_error("StepStatsQueue: nothing to read");
  const int s = first_;
  device_memory(device_).wait_host(done_[s]);
  done_[s].reset();
  first_ = (first_ + 1) % 2;
  --pending_;
  std::vector<StepReadback> out;
  out.reserve(static_cast<size_t>(replicas_));
  for (int r = 0; r < replicas_; ++r) out.push_back(decode_stats(slot(s) + 4 * r, classes));
  return out;
}

}  // namespace strata
