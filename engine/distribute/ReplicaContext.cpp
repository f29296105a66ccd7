#include "distribute/ReplicaContext.h"

#include <algorithm>
#include <cstring>

#include "backend/Backend.h"
#include "core/Clock.h"
#include "core/Error.h"
#include "nn/Variable.h"

namespace strata {

ReplicaContext::ReplicaContext(int replica_id, ReplicaGroup& group, CrossDeviceOps& ops, bool variables_shared,
                               size_t fusion_bytes, Device device, int replica_offset, int total_replicas,
                               bool sharded_update)
    : replica_id_(replica_id),
      group_(group),
      ops_(ops),
      variables_shared_(variables_shared),
      fusion_bytes_(fusion_bytes),
      device_(device),
      buckets_(fusion_bytes, device),
      replica_offset_(replica_offset),
      total_replicas_(total_replicas > 0 ? total_replicas : group.size),
      // Only among this process's replicas, each keeping its own variables.
      sharded_(sharded_update && !variables_shared && group.size > 1 && total_replicas_ == group.size) {}

template <typename F>
void ReplicaContext::timed(trace::SpanKind kind, size_t bytes, F&& collective) {
  const double t0 = monotonic_seconds();
  double waited = 0;
  {
    const Barrier::CountWaits count(tracer_ ? &waited : nullptr);
    const trace::DeviceSpans::Scoped on_device(device_spans_, device_, kind, trace::device_lane(replica_id_), trace_step_,
                                               static_cast<int64_t>(bytes));
    const trace::DeviceSpans::ScopedContext for_comm_streams({device_spans_, replica_id_, trace_step_});
    collective();
  }
  const double t1 = monotonic_seconds();
  collective_seconds_ += t1 - t0;
  ++collectives_;
  if (!tracer_) return;
  // Drawn as the wait first, then the transfer: in these collectives the
  // first barrier (everyone's buffers published) is where a replica waits.
  const double start_us = t0 * 1e6, wait_us = std::min(waited, t1 - t0) * 1e6;
  if (wait_us > 0) tracer_->record(trace::Span{trace::SpanKind::CollectiveWait, lane(), trace_step_, start_us, wait_us, 0});
  tracer_->record(
      trace::Span{kind, lane(), trace_step_, start_us + wait_us, (t1 - t0) * 1e6 - wait_us, static_cast<int64_t>(bytes)});
}

void ReplicaContext::reduce_buffer(float* data, size_t count) {
  timed(trace::SpanKind::AllReduce, count * sizeof(float), [&] {
    ops_.all_reduce_sum(group_, replica_id_, DeviceSpan{device_, data, count});
  });
}

void ReplicaContext::start_reduce(DeviceSpan bucket) {
  timed(trace::SpanKind::AllReduce, bucket.bytes(), [&] { ops_.start_all_reduce_sum(group_, replica_id_, bucket); });
}

void ReplicaContext::reduce_scatter(std::vector<Tensor>& grads) {
  std::vector<size_t> sizes;
  sizes.reserve(grads.size());
  gradients_.clear();
  size_t bytes = 0;
  for (auto& g : grads) {
    if (!g.device().same_memory(device_))
      throw runtime_error("reduce_scatter: a gradient on " + g.device().str() + " given to the replica on " + device_.str());
    sizes.push_back(static_cast<size_t>(g.numel()));
    gradients_.push_back(DeviceSpan{device_, g.ptr(), sizes.back()});
    bytes += gradients_.back().bytes();
  }
  if (!shards_.fits(sizes)) shards_ = UpdateShards(std::move(sizes), group_.size);
  scattered_ = grads;
  timed(trace::SpanKind::ReduceScatter, bytes, [&] { ops_.reduce_scatter_sum(group_, replica_id_, gradients_, shards_); });
}

const std::vector<ShardPiece>* ReplicaContext::update_shard() const {
  if (!sharded_) return nullptr;
  if (shards_.replicas() != group_.size)
    throw runtime_error("the sharded update: no gradients were reduced (finish_gradients) before it");
  return &shards_.of(replica_id_);
}

void ReplicaContext::gather_updated(const std::vector<Variable*>& vars) {
  if (!sharded_) return;
  variables_.clear();
  std::vector<size_t> sizes;
  size_t bytes = 0;
  for (auto* v : vars) {
    Tensor& mine = v->replica_component(replica_id_);
    sizes.push_back(static_cast<size_t>(mine.numel()));
    variables_.push_back(DeviceSpan{device_, mine.ptr(), sizes.back()});
    // One copy shared by the replicas: updated in place, nothing to copy.
    if (v->num_components() > 1) bytes += variables_.back().bytes();
  }
  if (!shards_.fits(sizes))
    throw runtime_error("the sharded update: the variables do not match the gradients reduced for them");
  timed(trace::SpanKind::AllGather, bytes, [&] { ops_.all_gather(group_, replica_id_, variables_, shards_); });
  scattered_.clear();  // the gather's waits order every owner's reads before anything later
}

void ReplicaContext::gradient_ready(size_t index, const Tensor& grad) {
  buckets_.add(index, grad, [this](DeviceSpan b) { start_reduce(b); });
}

void ReplicaContext::finish_gradients(std::vector<Tensor>& grads) {
  if (sharded_) {
    reduce_scatter(grads);
    return;
  }
  if (!buckets_.flush([this](DeviceSpan b) { start_reduce(b); })) {
    // The tape reported nothing (a custom loop without the hook): reduce now.
    all_reduce_sum(grads);
    return;
  }
  ops_.wait_all(group_, replica_id_);
  buckets_.unpack(grads);
}

void ReplicaContext::barrier() {
  Backend& be = backend_for(device_);
  auto& events = group_.barrier_events[barriers_++ % 2];
  events[static_cast<size_t>(replica_id_)] = be.record_event();
  group_.barrier.arrive_and_wait();
  for (int r = 0; r < group_.size; ++r)
    if (r != replica_id_) be.wait_event(events[static_cast<size_t>(r)]);
}

void ReplicaContext::all_reduce(ReduceOp op, std::vector<Tensor>& tensors) {
  Backend& be = backend_for(device_);
  for (auto& t : tensors)
    if (!t.device().same_memory(device_))
      throw runtime_error("all_reduce: a tensor on " + t.device().str() + " given to the replica on " + device_.str());
  if (total_replicas_ > 1) {
    const size_t cap = std::max<size_t>(1, fusion_bytes_ / sizeof(float));
    size_t i = 0;
    while (i < tensors.size()) {
      const auto n0 = static_cast<size_t>(tensors[i].numel());
      if (n0 >= cap) {
        // Big enough on its own: reduce in place, no packing copy.
        reduce_buffer(tensors[i].ptr(), n0);
        ++i;
        continue;
      }
      // Pack consecutive small tensors into one bucket (device-to-device copies).
      size_t j = i, total = 0;
      while (j < tensors.size() && total + static_cast<size_t>(tensors[j].numel()) <= cap) total += static_cast<size_t>(tensors[j++].numel());
      if (!fusion_.defined() || static_cast<size_t>(fusion_.numel()) < total)
        fusion_ = Tensor::empty(Shape{static_cast<int64_t>(total)}, device_);
      size_t off = 0;
      for (size_t k = i; k < j; ++k) {
        be.copy(fusion_.ptr() + off, tensors[k].ptr(), tensors[k].bytes());
        off += static_cast<size_t>(tensors[k].numel());
      }
      reduce_buffer(fusion_.ptr(), total);
      off = 0;
      for (size_t k = i; k < j; ++k) {
        be.copy(tensors[k].ptr(), fusion_.ptr() + off, tensors[k].bytes());
        off += static_cast<size_t>(tensors[k].numel());
      }
      i = j;
    }
  }
  if (op == ReduceOp::Mean && total_replicas_ > 1) {
    const float inv = 1.0f / static_cast<float>(total_replicas_);
    for (auto& t : tensors) be.axpby(t.numel(), inv, t.ptr(), 0.0f, t.ptr());
  }
}

Tensor ReplicaContext::all_reduce(ReduceOp op, const Tensor& tensor) {
  std::vector<Tensor> one{tensor.clone()};
  all_reduce(op, one);
  return one.front();
}

}  // namespace strata
