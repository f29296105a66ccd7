#include "core/UpdateShards.h"

#include <algorithm>
#include <numeric>

namespace strata {

namespace {
constexpr size_t kLineFloats = 64 / sizeof(float);
}

UpdateShards::UpdateShards(std::vector<size_t> sizes, int replicas)
    : sizes_(std::move(sizes)), shards_(static_cast<size_t>(std::max(1, replicas))) {
  const size_t n = shards_.size();
  std::vector<size_t> starts(sizes_.size() + 1, 0);
  std::partial_sum(sizes_.begin(), sizes_.end(), starts.begin() + 1);
  const size_t total = starts.back();
  // cuts[k]: where shard k begins in the flat order; the ideal cut moved back
  // to a cache-line boundary of the tensor it falls in.
  std::vector<size_t> cuts(n + 1, total);
  cuts[0] = 0;
  for (size_t k = 1; k < n; ++k) {
    const size_t ideal = total * k / n;
    const size_t t = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), ideal) - starts.begin()) - 1;
    const size_t cut = t < sizes_.size() ? starts[t] + (ideal - starts[t]) / kLineFloats * kLineFloats : total;
    cuts[k] = std::max(cuts[k - 1], cut);
  }
  for (size_t k = 0; k < n; ++k)
    for (size_t t = 0; t < sizes_.size(); ++t) {
      const size_t lo = std::max(cuts[k], starts[t]), hi = std::min(cuts[k + 1], starts[t + 1]);
      if (lo < hi)
        shards_[k].push_back(
            ShardPiece{static_cast<int>(t), static_cast<int64_t>(lo - starts[t]), static_cast<int64_t>(hi - lo)});
    }
}

size_t UpdateShards::elements(int replica) const {
  size_t sum = 0;
  for (const ShardPiece& p : of(replica)) sum += static_cast<size_t>(p.count);
  return sum;
}

}  // namespace strata
