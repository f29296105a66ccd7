#include "distribute/ReplicaContext.h"

#include <algorithm>
#include <cstring>

#include "core/Error.h"

namespace strata {

ReplicaContext::ReplicaContext(int replica_id, ReplicaGroup& group, CrossDeviceOps& ops, bool variables_shared,
                               size_t fusion_bytes, Device device)
    : replica_id_(replica_id),
      group_(group),
      ops_(ops),
      variables_shared_(variables_shared),
      fusion_bytes_(fusion_bytes),
      device_(device) {}

void ReplicaContext::reduce_buffer(std::span<float> data) {
  ops_.all_reduce_sum(group_, replica_id_, data);
  ++collectives_;
}

void ReplicaContext::all_reduce(ReduceOp op, std::vector<Tensor>& tensors) {
  if (group_.size > 1) {
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
  if (op == ReduceOp::Mean && group_.size > 1) {
    const float inv = 1.0f / static_cast<float>(group_.size);
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
