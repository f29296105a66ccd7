#pragma once
#include <cstdint>
#include <vector>

#include "core/Tensor.h"
#include "distribute/parameter_server/ShardPlan.h"

namespace strata {

// Figures of one parameter server since the run began.
struct ServerStats {
  int64_t updates = 0;        // gradients (or summed rounds) applied to its shard
  double busy_seconds = 0;    // time spent applying them (lock held)
  int64_t elements = 0;       // floats it holds
};

// One worker's slice of a round, from the worker's push to the trainer's
// tally: the one shape of a push (the MPI transport serialises it in one
// place, mpi/MpiParameterProtocol.h). How the gradient is applied: weight
// scales it; sync_slices == 0 applies it at once (asynchronous training),
// n > 0 adds it to the round's sum, applied when the n-th slice arrives
// (synchronous, k = 0). The slice's figures travel with it so the chief
// server can report the step when the workers are other processes.
struct PushRecord {
  int64_t round = 0;
  int worker = 0;
  float weight = 1.0f;
  int sync_slices = 0;
  int64_t examples = 0, round_examples = 0, correct = 0;
  double loss = 0;     // mean over the slice
  double seconds = 0;  // pull + compute + push
  // Rounds before this one whose updates were not all in the weights the
  // worker read (0..k).
  int staleness = 0;
  // Set where the push is applied: updates other workers applied to a shard
  // between this worker's pull and its push.
  int64_t updates_between = 0;
};

// What workers need from the parameter servers (docs/architecture.md §8: what to
// communicate, apart from how): read the current weights, send gradients.
// LocalParameterStore keeps the shards in this process's memory; a transport
// over MPI implements the same calls with messages.
class ParameterStore {
public:
  virtual ~ParameterStore() = default;
  virtual const ShardPlan& plan() const = 0;

  // Copies every shard's current weights into component `worker` of the
  // model's variables, for a step of `round`. Each shard is read whole (no
  // torn reads); returns each shard's version (updates applied) then.
  virtual std::vector<int64_t> pull(int worker, int64_t round) = 0;

  // Sends one worker's gradients (full tensors, in variable order). Returns
  // the largest number of updates other workers applied to a shard between
  // `pulled` and this push.
  virtual int64_t push(const std::vector<Tensor>& grads, const std::vector<int64_t>& pulled, const PushRecord& push) = 0;

  virtual std::vector<ServerStats> stats() const = 0;
};

}  // namespace strata
