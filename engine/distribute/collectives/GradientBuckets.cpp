#include "distribute/collectives/GradientBuckets.h"

#include "backend/Backend.h"
#include "core/Error.h"

namespace strata {

void GradientBuckets::add(size_t index, const Tensor& grad, const Launch& launch) {
  if (!grad.device().same_memory(device_))
    throw runtime_error("gradient " + std::to_string(index) + " is on " + grad.device().str() +
                        ", its replica on " + device_.str());
  const auto n = static_cast<size_t>(grad.numel());
  if (open_ < buckets_.size() && buckets_[open_].used > 0 && buckets_[open_].used + n > capacity_) launch_open(launch);
  if (open_ == buckets_.size()) buckets_.emplace_back();
  Bucket& b = buckets_[open_];
  Backend& be = backend_for(device_);
  if (!b.storage.defined() || static_cast<size_t>(b.storage.numel()) < b.used + n) {
    // Grows during the first steps only: later steps fill the same layout.
    Tensor bigger = Tensor::empty(Shape{static_cast<int64_t>(b.used + n)}, device_);
    if (b.used > 0) be.copy(bigger.ptr(), b.storage.ptr(), b.used * sizeof(float));
    b.storage = bigger;
  }
  if (n > 0) be.copy(b.storage.ptr() + b.used, grad.ptr(), n * sizeof(float));
  b.entries.push_back(Entry{index, b.used, n});
  b.used += n;
  if (b.used >= capacity_) launch_open(launch);
}

void GradientBuckets::launch_open(const Launch& launch) {
  Bucket& b = buckets_[open_];
  launch(DeviceSpan{device_, b.storage.ptr(), b.used});
  ++open_;
}

bool GradientBuckets::flush(const Launch& launch) {
  if (open_ < buckets_.size() && buckets_[open_].used > 0) launch_open(launch);
  return open_ > 0;
}

void GradientBuckets::clear() {
  for (Bucket& b : buckets_) {
    b.entries.clear();
    b.used = 0;
  }
  open_ = 0;
}

void GradientBuckets::unpack(std::vector<Tensor>& grads) {
  Backend& be = backend_for(device_);
  for (size_t k = 0; k < open_; ++k) {
    Bucket& b = buckets_[k];
    for (const Entry& e : b.entries) {
      if (e.index >= grads.size() || static_cast<size_t>(grads[e.index].numel()) != e.count)
        throw runtime_error("gradient " + std::to_string(e.index) + " reduced in a bucket has no matching tensor");
      if (e.count > 0) be.copy(grads[e.index].ptr(), b.storage.ptr() + e.offset, e.count * sizeof(float));
    }
  }
  clear();
}

}  // namespace strata
