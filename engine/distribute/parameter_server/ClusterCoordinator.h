#pragma once
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "data/Batch.h"
#include "distribute/PerReplica.h"
#include "distribute/parameter_server/ParameterServerStrategy.h"
#include "trace/TraceRecorder.h"

namespace strata {

// What a worker's step function returns: gradients for the model's
// variables (of the mean loss over its slice) and its figures.
struct WorkerStep {
  std::vector<Tensor> grads;
  double loss = 0;  // mean over the slice
  int64_t correct = 0;
};

struct WorkerLost {
  int worker = 0;
  std::string reason;
};

// Hands slices of global batches to parameter-server workers
// (tf.distribute.coordinator.ClusterCoordinator): schedule() queues a round's
// slices, any idle worker takes the lowest one, so a slow worker simply does
// fewer. A worker starts a slice of round t only once every round before
// t - k is fully applied (stale-synchronous parallel, bound k). A worker whose
// step throws is marked lost and its slice goes back to the queue; the others
// continue. A server (store) failure ends the run.
class ClusterCoordinator {
public:
  using StepFunction = std::function<WorkerStep(int worker, const Batch& slice)>;
  ClusterCoordinator(ParameterServerStrategy& strategy, StepFunction step);
  ~ClusterCoordinator();
  ClusterCoordinator(const ClusterCoordinator&) = delete;
  ClusterCoordinator& operator=(const ClusterCoordinator&) = delete;

  // Workers start taking slices (on the strategy's replica threads).
  void start();
  // Queues one global batch's slices as `round` (rounds are consecutive over
  // the run). Waits while two rounds' worth of slices are still untaken.
  // Throws when the run cannot continue (every worker lost, a server failed).
  void schedule(int64_t round, const PerReplica<Batch>& slices);
  // Waits until every scheduled slice is applied; the workers then idle
  // until start(). Throws like schedule().
  void join();

  // The pushes applied since the last call, each slice's figures in it.
  std::vector<PushRecord> take_results();
  std::vector<WorkerLost> take_lost();
  std::vector<int64_t> worker_steps() const;

  // Fault injection for tests and demonstrations (a thread cannot be
  // killed): worker w fails when it starts its step number `at_step` (1-based).
  void fail_worker_at(int worker, int64_t at_step);
  // The step timeline: each worker's step (the round), its pull, its push
  // and its wait for the staleness bound, on the worker's lane. Call
  // before start(); null turns it off.
  void trace(trace::TraceRecorder* recorder) { tracer_ = recorder; }

private:
  struct Task {
    Batch batch;
    int slices = 0;
    int64_t round_examples = 0;
  };
  using Key = std::pair<int64_t, int>;  // (round, slice)
  void worker_loop(int worker);
  int64_t watermark() const;  // every round <= this one is fully applied
  void check_fatal() const;

  ParameterServerStrategy& strategy_;
  StepFunction step_;
  ParameterStore& store_;
  const std::optional<int> bound_;
  trace::TraceRecorder* tracer_ = nullptr;
  const bool sync_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::map<Key, Task> queue_;
  std::map<int64_t, int> remaining_;  // slices not yet applied, per open round
  int64_t last_round_ = 0;
  int in_flight_ = 0;
  bool closing_ = false;
  std::thread runner_;
  std::exception_ptr fatal_;
  std::vector<int64_t> steps_;
  std::vector<bool> lost_;
  std::vector<int64_t> fail_at_;
  std::vector<PushRecord> results_;
  std::vector<WorkerLost> lost_events_;
};

}  // namespace strata
