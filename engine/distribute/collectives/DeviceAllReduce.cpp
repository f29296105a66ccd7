#include "distribute/collectives/DeviceAllReduce.h"

#include <algorithm>

#include "backend/Backend.h"
#include "core/Tensor.h"

namespace strata {

bool DeviceAllReduce::enabled(const std::vector<Device>& devices, std::string* why_not) const {
  return accelerators_of_one_kind(devices, "device_local all-reduce", why_not) &&
         devices_reach_each_other(devices, "device_local all-reduce", why_not);
}

void DeviceAllReduce::all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) {
  const int n = group.size;
  if (n == 1) return;
  const auto me = static_cast<size_t>(replica);
  const size_t len = buffer.size;
  auto chunk_begin = [&](int c) { return len * static_cast<size_t>(c) / static_cast<size_t>(n); };
  Backend& be = backend_for(buffer.device);
  group.buffers[me] = buffer.data;
  group.ready[me] = be.record_event();
  group.barrier.arrive_and_wait();  // every buffer and its ready event published

  // Reduce-scatter: this replica's stream sums chunk `replica` of every
  // buffer, in replica order, into its own buffer.
  for (int c = 0; c < n; ++c)
    if (c != replica) be.wait_event(group.ready[static_cast<size_t>(c)]);
  const size_t lo = chunk_begin(replica), hi = chunk_begin(replica + 1);
  const auto count = static_cast<int64_t>(hi - lo);
  float* mine = buffer.data;
  if (count > 0) {
    Tensor scratch;
    float* acc = mine + lo;
    if (replica != 0) {
      // Its own chunk is one of the terms: sum into scratch, then copy back.
      scratch = Tensor::empty(Shape{count}, buffer.device);
      acc = scratch.ptr();
      be.copy(acc, group.buffers[0] + lo, (hi - lo) * sizeof(float));
    }
    for (int c = 1; c < n; ++c) be.axpby(count, 1.0f, group.buffers[static_cast<size_t>(c)] + lo, 1.0f, acc);
    if (replica != 0) be.copy(mine + lo, acc, (hi - lo) * sizeof(float));
  }
  group.reduced[me] = be.record_event();
  group.barrier.arrive_and_wait();  // every chunk's reduction queued

  // All-gather: copy the other chunks from their owners once they are reduced.
  for (int c = 0; c < n; ++c) {
    if (c == replica) continue;
    be.wait_event(group.reduced[static_cast<size_t>(c)]);
    const size_t clo = chunk_begin(c), chi = chunk_begin(c + 1);
    if (chi > clo) be.copy(mine + clo, group.buffers[static_cast<size_t>(c)] + clo, (chi - clo) * sizeof(float));
  }
  group.done[me] = be.record_event();
  group.barrier.arrive_and_wait();
  // Nothing may write this buffer again before the others' copies from it ran.
  for (int c = 0; c < n; ++c)
    if (c != replica) be.wait_event(group.done[static_cast<size_t>(c)]);
}

// The stream order that makes the two halves safe without a closing wait:
// - A replica's next writes to its gradients (the next backward pass) follow
//   its gather, whose stream waited for every owner's `updated` event, which
//   each owner recorded after its reduction read those gradients.
// - An owner's next update of its shard follows its next scatter, whose
//   stream waited for every replica's `scatter_ready`, recorded after that
//   replica's gather copied the shard.
// The host's barriers keep the pointer lists and events alive as long as the
// others read them, as in InProcessAllReduce.
void DeviceAllReduce::reduce_scatter_sum(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                                         const UpdateShards& shards) {
  const int n = group.size;
  const auto me = static_cast<size_t>(replica);
  if (tensors.empty()) return;
  Backend& be = backend_for(tensors.front().device);
  group.scattered[me] = &tensors;
  group.scatter_ready[me] = be.record_event();
  group.barrier.arrive_and_wait();  // every replica's gradients and event published
  for (int r = 0; r < n; ++r)
    if (r != replica) be.wait_event(group.scatter_ready[static_cast<size_t>(r)]);

  // Sums in replica order, as all_reduce_sum: replica 0's term first, so a
  // replica other than 0 sums into scratch (its own piece is a later term).
  int64_t largest = 0;
  for (const ShardPiece& p : shards.of(replica)) largest = std::max(largest, p.count);
  Tensor scratch;
  if (replica != 0 && largest > 0) scratch = Tensor::empty(Shape{largest}, tensors.front().device);
  for (const ShardPiece& p : shards.of(replica)) {
    const auto v = static_cast<size_t>(p.variable);
    const auto bytes = static_cast<size_t>(p.count) * sizeof(float);
    float* mine = tensors[v].data + p.offset;
    float* acc = replica == 0 ? mine : scratch.ptr();
    if (replica != 0) be.copy(acc, (*group.scattered[0])[v].data + p.offset, bytes);
    for (int r = 1; r < n; ++r)
      be.axpby(p.count, 1.0f, (*group.scattered[static_cast<size_t>(r)])[v].data + p.offset, 1.0f, acc);
    if (replica != 0) be.copy(mine, acc, bytes);
  }
}

void DeviceAllReduce::all_gather(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                                 const UpdateShards& shards) {
  const auto me = static_cast<size_t>(replica);
  if (tensors.empty()) return;
  Backend& be = backend_for(tensors.front().device);
  group.gathered[me] = &tensors;
  group.updated[me] = be.record_event();
  group.barrier.arrive_and_wait();  // every shard's update queued
  for (int owner = 0; owner < group.size; ++owner) {
    if (owner == replica) continue;
    be.wait_event(group.updated[static_cast<size_t>(owner)]);
    const auto& theirs = *group.gathered[static_cast<size_t>(owner)];
    for (const ShardPiece& p : shards.of(owner)) {
      const auto v = static_cast<size_t>(p.variable);
      be.copy(tensors[v].data + p.offset, theirs[v].data + p.offset, static_cast<size_t>(p.count) * sizeof(float));
    }
  }
}

}  // namespace strata
