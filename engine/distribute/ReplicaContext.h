#pragma once
#include <vector>

#include "core/Tensor.h"
#include "distribute/collectives/CrossDeviceOps.h"
#include "distribute/collectives/GradientBuckets.h"
#include "distribute/collectives/ReduceOp.h"
#include "nn/ReplicaSync.h"
#include "trace/DeviceSpans.h"
#include "trace/TraceRecorder.h"

namespace strata {

// The context a replica function runs in (tf.distribute.ReplicaContext).
// all_reduce packs many small tensors into fusion buffers (horovod's tensor
// fusion) so one collective moves many gradients.
class ReplicaContext final : public ReplicaSync {
public:
  // replica_id: this process's replica index; replica_offset and
  // total_replicas place it among all workers' replicas.
  // sharded_update: reduce gradients for the sharded optimizer update
  // (ops.supports_sharding(devices) must hold; the strategy checks).
  ReplicaContext(int replica_id, ReplicaGroup& group, CrossDeviceOps& ops, bool variables_shared, size_t fusion_bytes,
                 Device device, int replica_offset = 0, int total_replicas = 0, bool sharded_update = false);

  int replica_id_in_sync_group() const override { return replica_offset_ + replica_id_; }
  int num_replicas_in_sync() const override { return total_replicas_; }
  int local_replica_id() const { return replica_id_; }
  const Device& device() const { return device_; }

  // In place, on every replica: each tensor becomes the sum (or mean) of that
  // tensor over all replicas. Must be called by every replica with tensors of
  // the same shapes in the same order.
  void all_reduce(ReduceOp op, std::vector<Tensor>& tensors);
  Tensor all_reduce(ReduceOp op, const Tensor& tensor);
  void all_reduce_sum(std::vector<Tensor>& tensors) override { all_reduce(ReduceOp::Sum, tensors); }
  bool variables_shared() const override { return variables_shared_; }
  // Accelerator replicas reduce gradients in buckets as the tape finalises
  // them: the host queues the backward pass and the collectives together
  // (and with NCCL they run on a stream of their own, beside the backward
  // pass). Host replicas compute on the calling thread, where a collective
  // blocks it, so they reduce once, after the backward pass.
  bool overlaps_backward() const override { return total_replicas_ > 1 && !device_.is_host() && !sharded_; }
  void gradient_ready(size_t index, const Tensor& grad) override;
  void finish_gradients(std::vector<Tensor>& grads) override;
  // Sharded: finish_gradients reduce-scatters the gradients where they lie
  // (no packing copies) and gather_updated all-gathers the weights.
  const std::vector<ShardPiece>* update_shard() const override;
  void gather_updated(const std::vector<Variable*>& vars) override;
  bool sharded_update() const { return sharded_; }
  // After a step that threw: no half-filled bucket carries into the next.
  void abandon_step() { buckets_.clear(); }
  // Host threads meet, and on devices with streams each stream also waits
  // for the work the others queued before the barrier.
  void barrier() override;

  // The step timeline: from now on this replica's collectives are recorded
  // into `recorder` as spans of `step` (the wait for the other replicas as
  // a collective_wait span before each), and on an accelerator also as the
  // device ran them (into `device_spans`). Null turns it off.
  void trace(trace::TraceRecorder* recorder, int64_t step, trace::DeviceSpans* device_spans = nullptr) {
    tracer_ = recorder;
    trace_step_ = step;
    device_spans_ = recorder ? device_spans : nullptr;
  }
  trace::TraceRecorder* tracer() const { return tracer_; }
  trace::DeviceSpans* device_spans() const { return device_spans_; }
  int64_t traced_step() const { return trace_step_; }
  trace::Lane lane() const { return trace::Lane{trace::LaneKind::Replica, replica_id_}; }

  // Collectives issued and seconds spent in them (waiting included) so far.
  int64_t collectives() const { return collectives_; }
  double collective_seconds() const { return collective_seconds_; }

private:
  void reduce_buffer(float* data, size_t count);
  void start_reduce(DeviceSpan bucket);
  void reduce_scatter(std::vector<Tensor>& grads);
  // Times a collective into collective_seconds_ (and the timeline).
  template <typename F>
  void timed(trace::SpanKind kind, size_t bytes, F&& collective);

  int replica_id_;
  ReplicaGroup& group_;
  CrossDeviceOps& ops_;
  bool variables_shared_;
  size_t fusion_bytes_;
  Device device_;
  Tensor fusion_;  // on device_, grown to the largest bucket
  GradientBuckets buckets_;
  uint64_t barriers_ = 0;
  int64_t collectives_ = 0;
  double collective_seconds_ = 0;
  int replica_offset_ = 0, total_replicas_ = 1;
  bool sharded_ = false;
  trace::TraceRecorder* tracer_ = nullptr;
  trace::DeviceSpans* device_spans_ = nullptr;
  int64_t trace_step_ = -1;
  UpdateShards shards_;                            // cut for the gradients' sizes on the first step
  std::vector<DeviceSpan> gradients_, variables_;  // what the two halves publish (read by the others)
  // The gradients the reduce-scatter published, held until the all-gather:
  // on streams the owners of other shards may still read them after this
  // replica's host moved on, so their memory must not return to the pool.
  std::vector<Tensor> scattered_;
};

}  // namespace strata
