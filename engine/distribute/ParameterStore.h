#pragma once
#include <cstdint>
#include <vector>

#include "core/Tensor.h"
#include "distribute/ShardPlan.h"

namespace strata {

// Figures of one parameter server since the run began.
struct ServerStats {
  int64_t updates = 0;        // gradients (or summed rounds) applied to its shard
  double busy_seconds = 0;    // time spent applying them (lock held)
  int64_t elements = 0;       // floats it holds
};

// What workers need from the parameter servers (DESIGN §8: what to
// communicate, apart from how): read the current weights, send gradients.
// LocalParameterStore keeps the shards in this process's memory; a transport
// over MPI implements the same calls with messages.
class ParameterStore {
public:
  virtual ~ParameterStore() = default;
  virtual const ShardPlan& plan() const = 0;

  // Copies every shard's current weights into component `worker` of the
  // model's variables. Each shard is read whole under its lock (no torn
  // reads); returns each shard's version (updates applied) at that moment.
  virtual std::vector<int64_t> pull(int worker) = 0;

  // Sends one worker's gradients (full tensors, in variable order).
  // sync_slices == 0: each shard applies them at once (asynchronous
  // training). sync_slices == n: the shard adds weight * gradient to the
  // round's sum and applies the sum when the n-th slice arrives (synchronous,
  // k = 0). Returns the largest number of updates other workers applied to a
  // shard between `pulled` and this push.
  virtual int64_t push(const std::vector<Tensor>& grads, const std::vector<int64_t>& pulled, float weight,
                       int sync_slices) = 0;

  virtual std::vector<ServerStats> stats() const = 0;
};

}  // namespace strata
