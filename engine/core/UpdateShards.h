#pragma once
#include <cstddef>
#include <vector>

#include "core/ShardPiece.h"

namespace strata {

// How the sharded optimizer update (ZeRO-1) divides a list of tensors among
// N replicas: their elements, laid end to end, cut into N contiguous ranges
// of about equal size; each range is a list of pieces of tensors. Cuts fall
// on whole cache lines of a tensor, so two replicas never write one line.
// Every replica builds the same shards from the same sizes.
class UpdateShards {
public:
  UpdateShards() = default;
  UpdateShards(std::vector<size_t> sizes, int replicas);

  int replicas() const { return static_cast<int>(shards_.size()); }
  const std::vector<ShardPiece>& of(int replica) const { return shards_[static_cast<size_t>(replica)]; }
  // Whether these shards were cut for tensors of these sizes.
  bool fits(const std::vector<size_t>& sizes) const { return sizes == sizes_; }
  // Elements in replica `replica`'s shard.
  size_t elements(int replica) const;

private:
  std::vector<size_t> sizes_;
  std::vector<std::vector<ShardPiece>> shards_;
};

}  // namespace strata
