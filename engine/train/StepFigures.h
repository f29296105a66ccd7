#pragma once
// What one worker contributes to a synchronous step's event: each local
// replica's losses and time, and the worker's totals and stop request (and
// rank 0's device-lane burst). One exchange per step (Cluster::all_gather of
// doubles) gives every worker every worker's figures, so all decide alike.
// pack and unpack are the only code that knows the layout, which is checked
// at compile time.
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace strata {

struct StepFigures {
  struct Replica {
    double scaled_loss = 0;  // this replica's share of the global mean
    double local_loss = 0;   // mean over this replica's own examples
    // Seconds the replica spent on the step, less its waits in collectives
    // (NaN for a replayed graph, whose replicas are not timed apart).
    double compute_seconds = std::numeric_limits<double>::quiet_NaN();
  };
  struct Worker {
    double correct = 0, examples = 0;  // summed over the worker's replicas
    double compute_seconds = 0;        // the worker's step, less collectives
    double stop = 0;                   // 1: a stop was requested here
    // Rank 0's: the step the workers' next device-lane burst begins with,
    // or -1 (Trainer::finish_step).
    double device_burst = -1;
  };
  static_assert(sizeof(Replica) == 3 * sizeof(double) && std::is_trivially_copyable_v<Replica>);
  static_assert(sizeof(Worker) == 5 * sizeof(double) && std::is_trivially_copyable_v<Worker>);

  std::vector<Replica> replicas;
  Worker worker;

  // The doubles this worker sends: its replicas', then its own.
  std::vector<double> pack() const;
  // Every worker's figures from the gathered doubles (each worker with
  // `replicas` local replicas), in rank order.
  static std::vector<StepFigures> unpack_all(const std::vector<double>& gathered, int replicas);
};

}  // namespace strata
