#include "distribute/DistributedDataset.h"

#include <algorithm>

#include "core/Error.h"

namespace strata {

namespace {
// Rows [begin, end) of `t` as a tensor on `device`, in one copy.
Tensor rows_on(const Tensor& t, int64_t begin, int64_t end, const Device& device) {
  if (device.same_memory(t.device())) return t.slice_rows(begin, end);
  std::vector<int64_t> dims = t.shape().dims();
  dims[0] = end - begin;
  Tensor out = Tensor::empty(Shape(dims), t.dtype(), device);
  out.copy_rows_from(t, begin, end);
  return out;
}
}  // namespace

PerReplica<Batch> split_batch(const Batch& global, int replicas, const std::vector<Device>& devices, int first) {
  const int64_t total = global.size();
  const int last = devices.empty() ? replicas : first + static_cast<int>(devices.size());
  std::vector<Batch> parts;
  int64_t begin = 0;
  for (int r = 0; r < last; ++r) {
    const int64_t len = total / replicas + (r < total % replicas ? 1 : 0);
    if (r >= first || devices.empty()) {
      const Device device = devices.empty() ? global.features.device() : devices[static_cast<size_t>(r - first)];
      Batch b;
      b.features = rows_on(global.features, begin, begin + len, device);
      b.labels = rows_on(global.labels, begin, begin + len, device);
      b.global_batch_size = total;
      parts.push_back(std::move(b));
    }
    begin += len;
  }
  return PerReplica<Batch>(std::move(parts));
}

DistributedDataset::DistributedDataset(std::shared_ptr<BatchPipeline> global, int replicas, int first, int local,
                                       std::vector<Device> devices)
    : global_(std::move(global)),
      replicas_(replicas),
      first_(first),
      local_(local < 0 ? replicas : local),
      devices_(devices.empty() ? std::vector<Device>(static_cast<size_t>(local_)) : std::move(devices)) {
  if (global_->options().batch_size < replicas)
    throw bad_input("global batch " + std::to_string(global_->options().batch_size) + " is smaller than the " +
                    std::to_string(replicas) + " replicas: every replica needs at least one example");
}

DistributedDataset::DistributedDataset(std::vector<std::shared_ptr<BatchPipeline>> per_replica, int workers,
                                       std::vector<Device> devices)
    : per_replica_(std::move(per_replica)),
      replicas_(static_cast<int>(per_replica_.size())),
      local_(replicas_),
      workers_(workers),
      devices_(devices.empty() ? std::vector<Device>(static_cast<size_t>(replicas_)) : std::move(devices)) {}

int64_t DistributedDataset::steps_per_epoch() const {
  if (global_) return global_->steps_per_epoch();
  // Every replica must take part in every step: stop with the shortest.
  int64_t steps = INT64_MAX;
  for (auto& p : per_replica_) steps = std::min(steps, p->steps_per_epoch());
  return per_replica_.empty() ? 0 : steps;
}

void DistributedDataset::begin_epoch(int64_t epoch, int64_t first_step) {
  next_epoch_ = epoch + 1;
  if (global_) global_->begin_epoch(epoch, first_step);
  for (auto& p : per_replica_) p->begin_epoch(epoch, first_step);
}

std::optional<PerReplica<Batch>> DistributedDataset::next() {
  if (global_) {
    auto b = global_->next();
    if (!b) return std::nullopt;
    // Every worker draws the same global batch (same seed, same order) and
    // keeps its replicas' slices: all agree on the steps, none overlap.
    return split_batch(*b, replicas_, devices_, first_);
  }
  std::vector<Batch> parts;
  int64_t total = 0;
  for (auto& p : per_replica_) {
    auto b = p->next();
    if (!b) return std::nullopt;
    total += b->size();
    parts.push_back(std::move(*b));
  }
  // Multi-worker: the other workers' pipelines are assumed to give as many.
  for (size_t r = 0; r < parts.size(); ++r) {
    parts[r].global_batch_size = total * workers_;
    parts[r] = parts[r].to(devices_[r]);
  }
  return PerReplica<Batch>(std::move(parts));
}

DistributedDataset::Iterator DistributedDataset::begin() {
  begin_epoch(next_epoch_);
  return Iterator(this);
}

}  // namespace strata
