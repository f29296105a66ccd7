#include "distribute/collectives/MultiWorkerAllReduce.h"

#include <cstring>

#include "core/Tensor.h"

#include "distribute/collectives/ChunkSum.h"

namespace strata {

bool MultiWorkerAllReduce::enabled(const std::vector<Device>&, std::string*) const { return true; }

void MultiWorkerAllReduce::all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) {
  if (buffer.device.is_host()) {
    reduce_host(group, replica, {buffer.data, buffer.size});
    return;
  }
  // The cluster transport moves host memory: stage the device buffer through
  // the host (NCCL replaces this for GPUs).
  thread_local std::vector<float> staging;
  staging.resize(buffer.size);
  copy_bytes(Device{}, staging.data(), buffer.device, buffer.data, buffer.bytes());
  reduce_host(group, replica, staging);
  copy_bytes(buffer.device, buffer.data, Device{}, staging.data(), buffer.bytes());
}

void MultiWorkerAllReduce::reduce_host(ReplicaGroup& group, int replica, std::span<float> buffer) {
  const int n = group.size;
  const size_t len = buffer.size();
  auto chunk_begin = [&](int c) { return len * static_cast<size_t>(c) / static_cast<size_t>(n); };
  float* mine = buffer.data();
  group.buffers[static_cast<size_t>(replica)] = mine;
  group.barrier.arrive_and_wait();
  if (n > 1) {
    // Local reduce-scatter: replica r sums chunk r of every local buffer.
    sum_buffers(group.buffers, chunk_begin(replica), chunk_begin(replica + 1), mine);
    group.barrier.arrive_and_wait();
  }
  if (replica == 0) {
    for (int c = 1; c < n; ++c)
      std::memcpy(mine + chunk_begin(c), group.buffers[static_cast<size_t>(c)] + chunk_begin(c),
                  (chunk_begin(c + 1) - chunk_begin(c)) * sizeof(float));
    cluster_->all_reduce_sum(buffer);
  }
  group.barrier.arrive_and_wait();
  if (replica != 0) std::memcpy(mine, group.buffers[0], len * sizeof(float));
  group.barrier.arrive_and_wait();
}

}  // namespace strata
