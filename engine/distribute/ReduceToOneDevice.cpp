#include "distribute/ReduceToOneDevice.h"

#include <cstring>

#include "distribute/ChunkSum.h"

namespace strata {

void ReduceToOneDevice::all_reduce_sum(ReplicaGroup& group, int replica, std::span<float> buffer) {
  const int n = group.size;
  if (n == 1) return;
  group.buffers[static_cast<size_t>(replica)] = buffer.data();
  group.barrier.arrive_and_wait();
  if (replica == 0) sum_buffers(group.buffers, 0, buffer.size(), buffer.data());
  group.barrier.arrive_and_wait();
  if (replica != 0) std::memcpy(buffer.data(), group.buffers[0], buffer.size() * sizeof(float));
  group.barrier.arrive_and_wait();
}

}  // namespace strata
