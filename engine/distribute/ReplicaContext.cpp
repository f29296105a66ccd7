#include "distribute/ReplicaContext.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/Error.h"

namespace strata {

ReplicaContext::ReplicaContext(int replica_id, ReplicaGroup& group, CrossDeviceOps& ops, bool variables_shared,
                               size_t fusion_bytes, Device device, int replica_offset, int total_replicas)
    : replica_id_(replica_id),
      group_(group),
      ops_(ops),
      variables_shared_(variables_shared),
      fusion_bytes_(fusion_bytes),
      device_(device),
      replica_offset_(replica_offset),
      total_replicas_(total_replicas > 0 ? total_replicas : group.size) {}

void ReplicaContext::reduce_buffer(std::span<float> data) {
  const auto t0 = std::chrono::steady_clock::now();
  ops_.all_reduce_sum(group_, replica_id_, data);
  collective_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++collectives_;
}

void ReplicaContext::all_reduce(ReduceOp op, std::vector<Tensor>& tensors) {
  if (total_replicas_ > 1) {
    const size_t cap = std::max<size_t>(1, fusion_bytes_ / sizeof(float));
    size_t i = 0;
    while (i < tensors.size()) {
      const auto n0 = static_cast<size_t>(tensors[i].numel());
      if (n0 >= cap) {
        // Big enough on its own: reduce in place, no packing copy.
        reduce_buffer(tensors[i].span());
        ++i;
        continue;
      }
      // Pack consecutive small tensors into one bucket.
      size_t j = i, total = 0;
      while (j < tensors.size() && total + static_cast<size_t>(tensors[j].numel()) <= cap) total += static_cast<size_t>(tensors[j++].numel());
      fusion_.resize(std::max(fusion_.size(), total));
      size_t off = 0;
      for (size_t k = i; k < j; ++k) {
        std::memcpy(fusion_.data() + off, tensors[k].data(), static_cast<size_t>(tensors[k].numel()) * sizeof(float));
        off += static_cast<size_t>(tensors[k].numel());
      }
      reduce_buffer({fusion_.data(), total});
      off = 0;
      for (size_t k = i; k < j; ++k) {
        std::memcpy(tensors[k].data(), fusion_.data() + off, static_cast<size_t>(tensors[k].numel()) * sizeof(float));
        off += static_cast<size_t>(tensors[k].numel());
      }
      i = j;
    }
  }
  if (op == ReduceOp::Mean && total_replicas_ > 1) {
    const float inv = 1.0f / static_cast<float>(total_replicas_);
    for (auto& t : tensors)
      for (auto& v : t.span()) v *= inv;
  }
}

Tensor ReplicaContext::all_reduce(ReduceOp op, const Tensor& tensor) {
  std::vector<Tensor> one{tensor.clone()};
  all_reduce(op, one);
  return one.front();
}

}  // namespace strata
