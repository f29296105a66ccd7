#pragma once
#include <cstdint>

namespace strata {

// A contiguous range of one variable's (or its gradient's) elements: what a
// parameter server holds (ShardPlan) or what one replica updates under the
// sharded update (UpdateShards).
struct ShardPiece {
  int variable = 0;  // index into the variable list the pieces were cut for
  int64_t offset = 0, count = 0;
};

}  // namespace strata
