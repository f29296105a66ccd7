#pragma once
#include <limits>
#include <atomic>
#include <functional>
#include <map>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "distribute/ClusterCoordinator.h"
#include "distribute/RemoteParameterServers.h"
#include "distribute/Strategy.h"
#include "nn/Loss.h"
#include "nn/Optimizer.h"
#include "nn/Sequential.h"
#include "train/Checkpoint.h"
#include "train/DataSource.h"
#include "train/Events.h"
#include "train/RunConfig.h"
#include "train/DeviceStatsSampler.h"
#include "train/StepGraph.h"
#include "train/LearningRateSchedule.h"
#include "train/TrainingCallbacks.h"

namespace strata {

// The training loop behind the dashboard and strata-run, written on the
// public strategy API (scope, distribute, run, reduce) exactly as a library
// user would. prepare() loads data and builds strategy, model and optimizer
// (bad_input on any problem, before anything runs); run() trains, emitting
// events, and returns the finished event. stop/pause are safe from any thread
// and take effect between steps.
class Trainer {
public:
  Trainer(RunConfig config, EventSink& sink);
  ~Trainer();

  void prepare();
  // Writes checkpoints under `dir` as the project's checkpoint settings say,
  // and always on Stop and at the end of the run. Call after prepare().
  void enable_checkpoints(const std::string& dir);
  // Continues from a checkpoint folder: weights, optimizer state, data
  // position and RNG state. Call after prepare(), before run().
  CheckpointInfo restore(const std::string& checkpoint_dir);
  FinishedEvent run();

  void request_stop() { stop_ = true; resume(); }
  void pause();
  void resume();
  bool paused() const { return paused_; }

  // Available after prepare().
  Strategy& strategy() { return *strategy_; }
  nn::Sequential& model() { return *model_; }
  nn::Optimizer& optimizer() { return *optimizer_; }
  const LoadedData& data() const { return data_; }
  const RunConfig& config() const { return config_; }

  struct Evaluation {
    double loss = 0, accuracy = 0;
    int64_t examples = 0;
    // confusion[true][predicted] counts; per-class accuracy = diagonal / row sum.
    std::vector<std::vector<int64_t>> confusion;
    std::vector<double> per_class_accuracy() const;
  };
  // Loss and accuracy on a dataset, computed across the replicas.
  Evaluation evaluate(const Dataset& dataset);
  // Loads a checkpoint's (or .safetensors file's) weights into the model and
  // evaluates the project's test split (its validation split if it has one);
  // prepares first if needed. bad_input when the data has no such split.
  Evaluation evaluate_checkpoint(const std::string& checkpoint);

private:
  struct StepResult {
    double scaled_loss = 0;  // this replica's share of the global mean
    double local_loss = 0;   // mean over this replica's own examples
    int64_t correct = 0, examples = 0;
    // Seconds this replica spent on the step, less its waits in collectives
    // (NaN for a replayed graph, whose replicas are not timed apart).
    double compute_seconds = std::numeric_limits<double>::quiet_NaN();
  };
  // One epoch's running figures for throughput and the stop decision.
  struct EpochProgress {
    double start = 0;
    int64_t samples = 0;  // this session's, for throughput
    bool stopping = false;
  };
  StepResult train_step(ReplicaContext& ctx, const Batch& in);
  // The step's device work, its figures into `stats` (step_stats()); reads
  // nothing back, so it can be captured as a graph (StepGraph).
  void enqueue_step(ReplicaContext& ctx, const Batch& in, Tensor& stats);
  StepResult step_result(const Tensor& stats, const Batch& in) const;
  // One synchronous step of every local replica: replayed as a graph where
  // the run has one (StepGraph), op by op otherwise.
  PerReplica<StepResult> run_step(const PerReplica<Batch>& inputs, int64_t step);
  int64_t logit_width_ = 0;  // the model's outputs per example (prepare())
  // The step graph of this run, when its steps can be captured (prepare()).
  void prepare_step_graph();
  std::unique_ptr<StepGraph> step_graph_;
  std::unique_ptr<DeviceStatsSampler> device_stats_;  // GPUs' load between steps (prepare())
  // 1 / global batch size on a local replica's device: the loss scale a step
  // reads from device memory, rewritten only when the global batch changes
  // (the partial last batch), so steady steps queue nothing for it.
  const Tensor& loss_scale(int replica, const Device& device, int64_t global_batch);
  struct LossScale {
    Tensor inverse;
    int64_t batch = 0;
  };
  std::vector<LossScale> loss_scales_;  // one per local replica, sized in prepare()
  // Makes the configured straggler replica take `slowdown` times as long.
  void straggle(int replica, double step_seconds) const;
  void wait_while_paused();
  double elapsed() const;
  void save_checkpoint(const TrainingPosition& position);
  void emit_run_started(int64_t steps_per_epoch);
  // The epoch's summary: validation, the epoch-end callbacks, the epoch
  // event, the epoch checkpoint. False when the run stops early here.
  bool finish_epoch(TrainingPosition& pos, const EpochProgress& ep, FinishedEvent& fin);
  // Sets the optimizer's rate for the step with 0-based index `step`: the
  // schedule's, times the plateau's reductions.
  void set_step_learning_rate(int64_t step);
  FinishedEvent finish_run(FinishedEvent fin, const TrainingPosition& pos);
  // Runs body; an error it throws becomes fin's failure message.
  static void fail_on_error(FinishedEvent& fin, const std::function<void()>& body);
  static TrainingPosition next_epoch(const TrainingPosition& pos);
  // "stopped by request after step 40 (epoch 3)", or "after epoch 2 (step
  // 32)" when the stop came between epochs.
  static std::string stop_message(const TrainingPosition& pos);
  // Advances pos by one step, completes and emits ev; false (and fin failed)
  // when the loss diverged.
  bool record_step(StepEvent& ev, TrainingPosition& pos, int64_t batch, int64_t correct, EpochProgress& ep, FinishedEvent& fin);
  // Synchronous strategies: every replica takes its slice of each global batch.
  void run_epoch_sync(TrainingPosition& pos, int64_t steps_per_epoch, DistributedDataset& dist, EpochProgress& ep,
                      FinishedEvent& fin);
  // ParameterServer (TrainerParameterServer.cpp): the coordinator hands the
  // slices to whichever worker is free; steps are emitted as rounds complete.
  void prepare_parameter_server();
  // One worker's step on its slice: gradients of the slice's mean loss.
  WorkerStep worker_step(int worker, const Batch& in);
  RemoteServerOptions remote_options() const;
  // Across processes: a server rank serves (rank 0 also reports and
  // evaluates), a worker rank trains its slice of every global batch.
  FinishedEvent run_parameter_server_process();
  void serve_as_chief(TrainingPosition& pos, int64_t steps_per_epoch, FinishedEvent& fin);
  void work_remotely(TrainingPosition& pos, int64_t steps_per_epoch, FinishedEvent& fin);
  void run_epoch_async(TrainingPosition& pos, int64_t steps_per_epoch, DistributedDataset& dist, EpochProgress& ep,
                       FinishedEvent& fin);
  // Step events of a parameter-server run: slices are tallied per round and
  // each round is emitted, in order, once all its slices are in.
  struct RoundTally {
    int expected = 0, done = 0;  // expected 0: every live worker's slice
    double loss_sum = 0;
    int64_t examples = 0, correct = 0;
    int staleness = 0;
  };
  void tally_slice(const SliceResult& r);
  void report_lost_worker(int worker, const std::string& reason, const std::string& what_next);
  bool emit_rounds(TrainingPosition& pos, EpochProgress& ep, FinishedEvent& fin);
  // Puts the servers' weights into the model (and their step count into the
  // optimizer) before evaluating or saving; a no-op for other strategies.
  void sync_model_from_servers();

  RunConfig config_;
  EventSink& sink_;
  LoadedData data_;
  std::unique_ptr<Strategy> strategy_;
  std::unique_ptr<nn::Sequential> model_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  std::unique_ptr<nn::Loss> loss_;
  std::vector<Variable*> trainable_;
  std::shared_ptr<BatchPipeline> pipeline_;
  std::unique_ptr<CheckpointManager> checkpoints_;
  TrainingPosition start_;  // where run() begins (a restored checkpoint's position)
  ValidationFigures last_validation_;
  std::unique_ptr<LearningRateSchedule> schedule_;  // run(): needs the steps per epoch
  std::unique_ptr<TrainingCallbacks> callbacks_;     // prepare()
  ParameterServerStrategy* ps_ = nullptr;  // strategy_ when it is a ParameterServerStrategy
  std::unique_ptr<ClusterCoordinator> coordinator_;
  std::unique_ptr<RemoteParameterStore> remote_;  // a worker rank's servers
  // Per-worker loss since the last step event (sum, count) and the last one reported.
  std::vector<std::pair<double, int64_t>> worker_loss_acc_;
  std::vector<double> worker_last_loss_, worker_last_seconds_;
  std::vector<int64_t> worker_steps_;
  std::vector<bool> lost_workers_;
  std::map<int64_t, RoundTally> rounds_;  // scheduled or pushed, not yet reported
  std::vector<ServerStats> last_server_stats_;
  std::vector<double> server_update_rates_;
  double last_server_stats_time_ = 0;

  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::mutex pause_mutex_;
  std::condition_variable pause_cv_;
  double start_time_ = 0;
  double paused_seconds_ = 0;
};

// Builds the configured model (unbuilt), optimizer and loss; bad_input on
// unknown types. Shared by the Trainer and tools such as evaluation.
std::unique_ptr<nn::Sequential> make_model(const RunConfig& config);
std::unique_ptr<nn::Optimizer> make_optimizer(const OptimizerConfig& config);
std::unique_ptr<nn::Loss> make_loss(const TrainingConfig& config);

}  // namespace strata
