#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/Tensor.h"
#include "data/BatchPipeline.h"
#include "distribute/InputContext.h"
#include "distribute/PerReplica.h"
#include "trace/DeviceSpans.h"
#include "trace/TraceRecorder.h"

namespace strata {

// Splits a global batch over n replicas: sizes differ by at most one, the
// first (B mod n) replicas take the extra example; nothing is duplicated or
// padded, and a replica may get zero examples of a tiny last batch (it still
// joins the step's collectives with zero gradients, so nothing hangs).
// With devices, only replicas [first, first + devices.size()) are kept, and
// each slice is copied from the global batch straight to its device (one
// copy of the global batch in all).
PerReplica<Batch> split_batch(const Batch& global, int replicas, const std::vector<Device>& devices = {}, int first = 0);

// strategy.distribute(dataset): iterating yields one PerReplica<Batch> per
// step. Either one pipeline of global batches that is split, or one pipeline
// per replica built by an input function (distribute_datasets_from_function).
class DistributedDataset {
public:
  // Splits each global batch over `replicas` (all workers' replicas) and
  // yields the slices of this process's replicas [first, first + local).
  // Slices are copied to `devices` (this process's replica devices; empty: all on the host).
  DistributedDataset(std::shared_ptr<BatchPipeline> global, int replicas, int first = 0, int local = -1,
                     std::vector<Device> devices = {});
  // workers: processes with as many pipelines each (the step's global batch
  // counts all of them).
  explicit DistributedDataset(std::vector<std::shared_ptr<BatchPipeline>> per_replica, int workers = 1,
                              std::vector<Device> devices = {});

  int num_replicas() const { return local_; }
  int64_t steps_per_epoch() const;
  // Starts an epoch (optionally mid-way, for resume).
  void begin_epoch(int64_t epoch, int64_t first_step = 0);
  std::optional<PerReplica<Batch>> next();
  // Host replicas that keep every core busy gather their own slice (rows of
  // the dataset, converted to floats) in their own thread, through
  // to_features: next() hands out pending batches (Batch::pending) and no
  // prefetch thread runs. A prefetch thread had to win a core from the
  // replicas it feeds, and the step waited for it. No effect unless every
  // replica is on the host (accelerators convert on their device).
  void gather_in_replicas(bool on);
  // `b` ready to train on: gathered where next() left it pending, converted
  // on its replica's device where it left uint8 pixels; otherwise `b`
  // itself. Each replica may call it from its own thread for its own
  // `replica`.
  Batch to_features(Batch b, size_t replica);
  // The step timeline: next() records the batch's way to accelerator
  // replicas (copy and conversion) as host_to_device spans of `step`: the
  // host's on the run lane, each device's on its replica's device lane.
  void trace(trace::TraceRecorder* recorder, trace::DeviceSpans* device_spans, int64_t step) {
    tracer_ = recorder;
    device_spans_ = recorder ? device_spans : nullptr;
    trace_step_ = step;
  }

  // Range-for: each loop over the dataset is the next epoch, as iterating a
  // tf.distribute.DistributedDataset again reshuffles.
  class Iterator {
  public:
    Iterator() = default;
    explicit Iterator(DistributedDataset* ds) : ds_(ds) { advance(); }
    const PerReplica<Batch>& operator*() const { return *current_; }
    Iterator& operator++() {
      advance();
      return *this;
    }
    bool operator!=(const Iterator& o) const { return current_.has_value() != o.current_.has_value(); }

  private:
    void advance() { current_ = ds_->next(); }
    DistributedDataset* ds_ = nullptr;
    std::optional<PerReplica<Batch>> current_;
  };
  Iterator begin();
  Iterator end() { return Iterator(); }

private:
  std::shared_ptr<BatchPipeline> global_;
  std::vector<std::shared_ptr<BatchPipeline>> per_replica_;
  int replicas_;
  int first_ = 0, local_;
  int workers_ = 1;
  std::vector<Device> devices_;
  int64_t next_epoch_ = 0;
  // Image data for accelerator replicas travels as uint8 and becomes floats
  // on each device; the dataset's normalisation is copied there once.
  bool accelerators_ = false;
  std::vector<Tensor> mean_on_, inv_std_on_;
  // An image training set small enough (kDeviceDataBytes) is kept whole on
  // every accelerator replica's device: a batch crosses as its row numbers
  // (4 bytes an example instead of the image) and is gathered there
  // and converted there in one pass (Backend::gather_examples), so the
  // host's work per step is the shuffle's indices, not a copy of every
  // image. Indexed like devices_; replicas on one device share one copy.
  // STRATA_DEVICE_DATA=0 turns it off.
  struct DeviceTable {
    Tensor pixels, labels;
  };
  bool device_data_ = false;
  std::vector<DeviceTable> tables_;
  const DeviceTable& table_on(size_t replica);
  Batch gather_on_device(const Batch& pending, size_t replica);
  // The dataset's normalisation on the replica's device (copied once), or
  // nulls where it has none.
  std::pair<const float*, const float*> normalisation_on(size_t replica);
  trace::TraceRecorder* tracer_ = nullptr;
  trace::DeviceSpans* device_spans_ = nullptr;
  int64_t trace_step_ = -1;
};

}  // namespace strata
