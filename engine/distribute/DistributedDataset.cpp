#include "distribute/DistributedDataset.h"

#include <algorithm>

#include "core/Error.h"

namespace strata {

PerReplica<Batch> split_batch(const Batch& global, int replicas) {
  const int64_t total = global.size();
  std::vector<Batch> parts;
  int64_t begin = 0;
  for (int r = 0; r < replicas; ++r) {
    const int64_t len = total / replicas + (r < total % replicas ? 1 : 0);
    Batch b;
    b.features = global.features.slice_rows(begin, begin + len);
    b.labels = global.labels.slice_rows(begin, begin + len);
    b.global_batch_size = total;
    parts.push_back(std::move(b));
    begin += len;
  }
  return PerReplica<Batch>(std::move(parts));
}

DistributedDataset::DistributedDataset(std::shared_ptr<BatchPipeline> global, int replicas, int first, int local)
    : global_(std::move(global)), replicas_(replicas), first_(first), local_(local < 0 ? replicas : local) {
  if (global_->options().batch_size < replicas)
    throw bad_input("global batch " + std::to_string(global_->options().batch_size) + " is smaller than the " +
                    std::to_string(replicas) + " replicas: every replica needs at least one example");
}

DistributedDataset::DistributedDataset(std::vector<std::shared_ptr<BatchPipeline>> per_replica, int workers)
    : per_replica_(std::move(per_replica)),
      replicas_(static_cast<int>(per_replica_.size())),
      local_(replicas_),
      workers_(workers) {}

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
    PerReplica<Batch> all = split_batch(*b, replicas_);
    if (local_ == replicas_) return all;
    // Every worker draws the same global batch (same seed, same order) and
    // keeps its replicas' slices: all agree on the steps, none overlap.
    std::vector<Batch> mine(all.values().begin() + first_, all.values().begin() + first_ + local_);
    return PerReplica<Batch>(std::move(mine));
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
  for (auto& b : parts) b.global_batch_size = total * workers_;
  return PerReplica<Batch>(std::move(parts));
}

DistributedDataset::Iterator DistributedDataset::begin() {
  begin_epoch(next_epoch_);
  return Iterator(this);
}

}  // namespace strata
