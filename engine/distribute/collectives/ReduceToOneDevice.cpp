#include "distribute/collectives/ReduceToOneDevice.h"

#include <cstring>

#include "backend/Backend.h"
#include "distribute/collectives/ChunkSum.h"

namespace strata {

void ReduceToOneDevice::all_reduce_sum(ReplicaGroup& group, int replica, DeviceSpan buffer) {
  const int n = group.size;
  if (n == 1) return;
  const auto me = static_cast<size_t>(replica);
  group.buffers[me] = buffer.data;
  if (buffer.device.is_host()) {
    group.barrier.arrive_and_wait();
    if (replica == 0) sum_buffers(group.buffers, 0, buffer.size, buffer.data);
    group.barrier.arrive_and_wait();
    if (replica != 0) std::memcpy(buffer.data, group.buffers[0], buffer.bytes());
    group.barrier.arrive_and_wait();
    return;
  }
  // Devices: the same, in the streams. Replica 0's stream sums every buffer
  // (in replica order) once each is ready; the others copy the result back.
  Backend& be = backend_for(buffer.device);
  group.ready[me] = be.record_event();
  group.barrier.arrive_and_wait();
  if (replica == 0) {
    for (int c = 1; c < n; ++c) {
      be.wait_event(group.ready[static_cast<size_t>(c)]);
      be.axpby(static_cast<int64_t>(buffer.size), 1.0f, group.buffers[static_cast<size_t>(c)], 1.0f, buffer.data);
    }
    group.reduced[0] = be.record_event();
  }
  group.barrier.arrive_and_wait();
  if (replica != 0) {
    be.wait_event(group.reduced[0]);
    be.copy(buffer.data, group.buffers[0], buffer.bytes());
  }
  group.done[me] = be.record_event();
  group.barrier.arrive_and_wait();
  if (replica == 0)
    for (int c = 1; c < n; ++c) be.wait_event(group.done[static_cast<size_t>(c)]);
}

}  // namespace strata
