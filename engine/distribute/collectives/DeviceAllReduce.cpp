#include "distribute/collectives/DeviceAllReduce.h"

#include "backend/Backend.h"
#include "core/Tensor.h"

namespace strata {

bool DeviceAllReduce::enabled(const std::vector<Device>& devices, std::string* why_not) const {
  return accelerators_of_one_kind(devices, "device_local all-reduce", why_not);
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

}  // namespace strata
