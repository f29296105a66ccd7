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

}  // namespace strata
