#include "distribute/collectives/InProcessAllReduce.h"

#include <cstring>

#include "distribute/collectives/ChunkSum.h"

namespace strata {

bool InProcessAllReduce::enabled(const std::vector<Device>& devices, std::string* why_not) const {
  return host_devices_only(devices, "in_process all-reduce", why_not);
}

void InProcessAllReduce::all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) {
  const int n = group.size;
  if (n == 1) return;
  const size_t len = buffer.size;
  auto chunk_begin = [&](int c) { return len * static_cast<size_t>(c) / static_cast<size_t>(n); };
  group.buffers[static_cast<size_t>(replica)] = buffer.data;
  group.barrier.arrive_and_wait();  // all buffers published

  // Reduce-scatter: this replica owns chunk `replica`. It reads that chunk of
  // every buffer and writes only its own; other replicas write other chunks.
  float* mine = buffer.data;
  sum_buffers(group.buffers, chunk_begin(replica), chunk_begin(replica + 1), mine);
  group.barrier.arrive_and_wait();  // every chunk reduced at its owner

  // All-gather: copy the reduced chunks owned by the others.
  for (int c = 0; c < n; ++c) {
    if (c == replica) continue;
    const size_t clo = chunk_begin(c), chi = chunk_begin(c + 1);
    std::memcpy(mine + clo, group.buffers[static_cast<size_t>(c)] + clo, (chi - clo) * sizeof(float));
  }
  group.barrier.arrive_and_wait();  // nobody still reads our buffer
}

// No barrier at the end of either half: the owner of a shard writes only
// that shard of its own tensors, and the others read only other shards of
// it. The gather's barrier orders the scatter's reads before anyone's next
// write, and the next step's scatter barrier orders the gather's copies
// before the next update.
void InProcessAllReduce::reduce_scatter_sum(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                                            const UpdateShards& shards) {
  const auto n = static_cast<size_t>(group.size);
  group.scattered[static_cast<size_t>(replica)] = &tensors;
  group.barrier.arrive_and_wait();  // every replica's gradients published
  std::vector<float*> terms(n);
  for (const ShardPiece& p : shards.of(replica)) {
    const auto v = static_cast<size_t>(p.variable);
    for (size_t r = 0; r < n; ++r) terms[r] = (*group.scattered[r])[v].data + p.offset;
    sum_buffers(terms, 0, static_cast<size_t>(p.count), tensors[v].data + p.offset);
  }
}

// The barrier is needed also where the replicas share one copy of the
// variables (Strategy keeps one for host replicas): nobody reads the weights
// of the next step before every shard is updated.
void InProcessAllReduce::all_gather(ReplicaGroup& group, int replica, const std::vector<DeviceSpan>& tensors,
                                    const UpdateShards& shards) {
  group.gathered[static_cast<size_t>(replica)] = &tensors;
  group.barrier.arrive_and_wait();  // every shard updated by its owner
  for (int owner = 0; owner < group.size; ++owner) {
    if (owner == replica) continue;
    const auto& theirs = *group.gathered[static_cast<size_t>(owner)];
    for (const ShardPiece& p : shards.of(owner)) {
      const auto v = static_cast<size_t>(p.variable);
      // A variable the replicas share (one copy) has its owner's update already.
      if (tensors[v].data == theirs[v].data) continue;
      std::memcpy(tensors[v].data + p.offset, theirs[v].data + p.offset, static_cast<size_t>(p.count) * sizeof(float));
    }
  }
}

}  // namespace strata
