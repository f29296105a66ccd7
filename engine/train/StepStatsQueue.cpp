#include "train/StepStatsQueue.h"

#include <algorithm>
#include <cstdlib>

#include "core/Error.h"
#include "core/WholePages.h"

namespace strata {

StepStatsQueue::StepStatsQueue(std::vector<Device> devices) : devices_(std::move(devices)) {
  for (const Device& d : devices_)
    if (std::find(distinct_.begin(), distinct_.end(), d) == distinct_.end()) distinct_.push_back(d);
  // One registration serves every device (CUDA: registered portable).
  bytes_ = 2 * devices_.size() * 4 * sizeof(float);
  host_ = static_cast<float*>(allocate_whole_pages(bytes_));
  try {
    device_memory(devices_.front()).pin_host_memory(host_, bytes_);
  } catch (...) {
    std::free(host_);
    throw;
  }
}

StepStatsQueue::~StepStatsQueue() {
  for (int i = 0; i < pending_; ++i) {
    try {
      wait((first_ + i) % 2);
    } catch (...) {
      // The run already failed (or is failing) for this reason; the memory
      // must outlive the copy all the same, so the wait is still made.
    }
  }
  device_memory(devices_.front()).unpin_host_memory(host_);
  std::free(host_);
}

void StepStatsQueue::wait(int s) {
  // Every device's wait is made even when one throws: the copies must have landed before the slot is reused or freed.
  std::exception_ptr first;
  for (size_t i = 0; i < done_[s].size(); ++i) {
    try {
      device_memory(distinct_[i]).wait_host(done_[s][i]);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  done_[s].clear();
  if (first) std::rethrow_exception(first);
}

void StepStatsQueue::push(const std::vector<Tensor>& stats) {
  if (pending_ == 2) throw runtime_error("StepStatsQueue: a third step pushed before the oldest was read");
  if (stats.size() != devices_.size())
    throw runtime_error("StepStatsQueue: " + std::to_string(stats.size()) + " stats for " + std::to_string(devices_.size()) +
                        " replicas");
  const int s = (first_ + pending_) % 2;
  done_[s].clear();
  try {
    for (int r = 0; r < replicas(); ++r)
      device_memory(devices_[static_cast<size_t>(r)])
          .copy_to_host(slot(s) + 4 * r, stats[static_cast<size_t>(r)].ptr(), 4 * sizeof(float));
    for (const Device& d : distinct_) done_[s].push_back(device_memory(d).record_event());
  } catch (...) {
    // Copies already queued write into the slot: they must land before the
    // destructor frees it (it waits only for pushes that completed).
    for (const Device& d : distinct_) {
      try {
        device_memory(d).synchronize();
      } catch (...) {
      }
    }
    done_[s].clear();
    throw;
  }
  ++pending_;
}

std::vector<StepReadback> StepStatsQueue::pop(int64_t classes) {
  if (pending_ == 0) throw runtime_error("StepStatsQueue: nothing to read");
  const int s = first_;
  first_ = (first_ + 1) % 2;
  --pending_;
  wait(s);
  std::vector<StepReadback> out;
  out.reserve(devices_.size());
  for (int r = 0; r < replicas(); ++r) out.push_back(decode_stats(slot(s) + 4 * r, classes));
  return out;
}

}  // namespace strata
