#pragma once
// A ParameterServerStrategy run, hosted by the Trainer's loop (TrainingLoop):
// in one process the coordinator hands the slices of each global batch to
// whichever worker is free; across processes a server rank serves its shard
// (rank 0 also reports and evaluates) and a worker rank trains its slice of
// every global batch. Either way step events are emitted as rounds (global
// batches) become fully applied, in round order.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "distribute/DistributedDataset.h"
#include "distribute/parameter_server/ClusterCoordinator.h"
#include "distribute/parameter_server/ParameterServerStrategy.h"
#include "distribute/parameter_server/RemoteParameterServers.h"
#include "nn/Loss.h"
#include "nn/Optimizer.h"
#include "nn/Sequential.h"
#include "train/RunConfig.h"
#include "train/TrainingLoop.h"

namespace strata {

class ParameterServerRun {
public:
  // Places the trainable variables on the servers and readies the workers:
  // a coordinator in one process, a worker rank's connection to the server
  // ranks across processes. bad_input on settings the run cannot honour.
  ParameterServerRun(ParameterServerStrategy& strategy, const RunConfig& config, nn::Sequential& model, nn::Loss& loss,
                     nn::Optimizer& optimizer, std::vector<Variable*> trainable, TrainingLoop& loop);
  ~ParameterServerRun();

  bool multi_process() const { return ps_.multi_process(); }
  int num_workers() const { return ps_.num_workers(); }
  // Across processes: this rank's share of the global batches (a server
  // rank's is worker 0's; it only counts the steps).
  DistributedDataset distribute(std::shared_ptr<BatchPipeline> pipeline) const;
  // The parameter-server figures of the run_started event.
  void describe(RunStartedEvent& started) const;
  // After a checkpoint was loaded into the model and optimizer: the servers
  // take its weights and step count, and the run continues after `start`.
  void restore(const TrainingPosition& start);
  // Puts the servers' weights into the model (and their step count into the
  // optimizer) before evaluating or saving.
  void sync_model();
  // The step timeline of this process's workers (pulls, pushes, staleness
  // waits), in one process or as a worker rank.
  void trace(trace::TraceRecorder* recorder);

  // One epoch in one process: schedules the rounds, emits them as they
  // complete, checkpoints where the settings say (a consistent cut).
  void run_epoch(TrainingPosition& pos, int64_t steps_per_epoch, DistributedDataset& dist, EpochProgress& ep,
                 FinishedEvent& fin);
  // The whole run across processes, as this rank's role says.
  void run_processes(TrainingPosition& pos, int64_t steps_per_epoch, DistributedDataset& dist, FinishedEvent& fin);

private:
  // Slices are tallied per round and each round is emitted, in order, once
  // all its slices are in.
  struct RoundTally {
    int expected = 0, done = 0;  // expected 0: every live worker's slice
    double loss_sum = 0;
    int64_t examples = 0, correct = 0;
    int staleness = 0;
  };
  // One worker's step on its slice: gradients of the slice's mean loss.
  WorkerStep worker_step(int worker, const Batch& in);
  RemoteServerOptions remote_options() const;
  void serve_as_chief(TrainingPosition& pos, int64_t steps_per_epoch, FinishedEvent& fin);
  void work_remotely(TrainingPosition& pos, int64_t steps_per_epoch, DistributedDataset& dist, FinishedEvent& fin);
  void tally_slice(const PushRecord& r);
  void report_lost_worker(int worker, const std::string& reason, const std::string& what_next);
  // Emits every complete round in order; false when the loss diverged.
  bool emit_rounds(TrainingPosition& pos, EpochProgress& ep, FinishedEvent& fin);
  // Servers' update rates over at least 50 ms, so they do not jitter from
  // step to step.
  std::vector<double> server_update_rates();

  ParameterServerStrategy& ps_;
  const RunConfig& config_;
  nn::Sequential& model_;
  nn::Loss& loss_;
  nn::Optimizer& optimizer_;
  const std::vector<Variable*> trainable_;
  TrainingLoop& loop_;
  TrainingPosition start_;                           // where the run begins (a restored checkpoint's position)
  std::unique_ptr<ClusterCoordinator> coordinator_;  // in one process
  std::unique_ptr<RemoteParameterStore> remote_;     // a worker rank's servers
  trace::TraceRecorder* tracer_ = nullptr;           // trace()
  // Per-worker loss since the last step event (sum, count) and the last one reported.
  std::vector<std::pair<double, int64_t>> worker_loss_acc_;
  std::vector<double> worker_last_loss_, worker_last_seconds_;
  std::vector<int64_t> worker_steps_;
  std::vector<bool> lost_workers_;
  std::map<int64_t, RoundTally> rounds_;  // scheduled or pushed, not yet reported
  std::vector<ServerStats> last_server_stats_;
  std::vector<double> server_update_rates_;
  double last_server_stats_time_ = 0;
};

}  // namespace strata
