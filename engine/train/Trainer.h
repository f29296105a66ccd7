#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "distribute/DistributedDataset.h"
#include "distribute/Strategy.h"
#include "nn/Loss.h"
#include "nn/Optimizer.h"
#include "nn/Sequential.h"
#include "trace/DeviceSpans.h"
#include "train/Checkpoint.h"
#include "train/DataSource.h"
#include "train/DeviceStatsSampler.h"
#include "train/Events.h"
#include "train/LearningRateSchedule.h"
#include "train/RunConfig.h"
#include "train/StepFigures.h"
#include "train/StepGraph.h"
#include "train/StepStatsQueue.h"
#include "train/StepTracer.h"
#include "train/TrainingCallbacks.h"
#include "train/TrainingLoop.h"

namespace strata {

class ParameterServerRun;

// The training loop behind the dashboard and strata-run, written on the
// public strategy API (scope, distribute, run, reduce) exactly as a library
// user would. prepare() loads data and builds strategy, model and optimizer
// (bad_input on any problem, before anything runs); run() trains, emitting
// events, and returns the finished event. stop/pause are safe from any thread
// and take effect between steps. A parameter-server run's rounds and
// processes are ParameterServerRun's, hosted by this loop.
class Trainer : private TrainingLoop {
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

  // The spans of the step timeline as they are collected (tracing on; call
  // after prepare(), before run()). Called on the training thread.
  void set_span_listener(StepTracer::Listener listener);
  // Writes the timeline as a Chrome trace file (tracing on; after prepare(),
  // before run()): the run folder's trace.json when the config names none.
  void write_trace_to(const std::string& file);

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
    StepFigures::Replica figures;
    int64_t correct = 0, examples = 0;
  };
  // One replica's eager step; `input` may still need to_features (gather_in_replicas).
  StepResult train_step(ReplicaContext& ctx, const Batch& input, DistributedDataset& dist);
  // The step's device work, its figures into `stats` (step_stats()); reads
  // nothing back, so it can be captured as a graph (StepGraph).
  // `captured`: into a step graph (its device phases then share their marks).
  void enqueue_step(ReplicaContext& ctx, const Batch& in, Tensor& stats, bool captured);
  // train_step without the read: the batch to the replica (into `in`), the
  // step queued; returns the stats tensor its figures will be in.
  Tensor queue_train_step(ReplicaContext& ctx, const Batch& input, DistributedDataset& dist, Batch& in);
  // The replicas' stats of a step queued on accelerators, to be read by
  // finish_queued; `graph`: which of StepGraph's graphs ran it, -1 op by op.
  void queue_stats(const std::vector<Tensor>& stats, int graph);
  StepResult step_result(const Tensor& stats, const Batch& in) const;
  static StepResult result_of(const StepReadback& back, int64_t examples, int64_t global_batch);
  // One synchronous step of every local replica: replayed as a graph where
  // the run has one (StepGraph), op by op otherwise. A step on accelerators
  // (replayed, or op by op when read_eager_steps_late_) has its figures read
  // one step late (StepStatsQueue): it returns nullopt and becomes queued_.
  std::optional<PerReplica<StepResult>> run_step(const PerReplica<Batch>& inputs, int64_t step, DistributedDataset& dist);
  // A step queued on accelerators whose figures are still on their way from
  // the device: the host prepares and queues the next step meanwhile. At
  // most one; it is finished before anything that must see the model after
  // it (a pause, a stop, a checkpoint, the epoch's end).
  struct QueuedStep {
    int64_t step = 0;
    float lr = 0;                                 // the rate the step ran at (the next step may set another)
    int graph = -1;                               // which marked graph ran it (StepGraph::marked_graph); -1: none
    std::vector<int64_t> examples, global_batch;  // per replica
  };
  std::optional<QueuedStep> queued_;
  std::unique_ptr<StepStatsQueue> stats_queue_;  // the first queued step makes it
  int queued_graph_ = -1;                        // queue_stats(): the graph of the step just queued
  // Op-by-op steps of replicas that are all on accelerators are queued and
  // read one step late as replays are (prepare_step_execution()).
  bool read_eager_steps_late_ = false;
  double last_step_end_ = 0;     // when the previous step's figures were in (monotonic)
  int64_t steps_per_epoch_ = 0;  // run()
  bool finish_queued(TrainingPosition& pos, EpochProgress& ep, FinishedEvent& fin);
  // A step's figures become its event (exchanged among the workers first)
  // and, when due, a checkpoint; false when the run must end (diverged).
  bool finish_step(const PerReplica<StepResult>& results, double compute_seconds, float lr, TrainingPosition& pos,
                   EpochProgress& ep, FinishedEvent& fin);
  bool checkpoint_due(int64_t step) const;
  int64_t logit_width_ = 0;  // the model's outputs per example (prepare())
  // How this run's steps execute (prepare()): captured as a graph where
  // they can be (step_graph_), and whether op-by-op steps are read late.
  void prepare_step_execution();
  // Side branches for the weight gradients on the devices one local replica
  // uses (allowed: prepare()), or no longer from this run (not: the
  // destructor, for the devices it allowed them on; another run's
  // allowance on the same device stands).
  void allow_branches(bool allowed);
  std::vector<Device> branched_devices_;
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
  // TrainingLoop: the bookkeeping a parameter-server run shares.
  void straggle(int replica, double step_seconds) const override;
  // RunConfig's fail_replica: throws on that replica, as its step starts.
  void fail_on_purpose(const ReplicaContext& ctx) const;
  void wait_while_paused() override;
  bool stop_requested() const override { return stop_; }
  double elapsed() const override;
  void log(const std::string& level, const std::string& message) override;
  void flush_trace(int64_t completed) override;
  void save_checkpoint(const TrainingPosition& position) override;
  bool finish_epoch(TrainingPosition& pos, const EpochProgress& ep, FinishedEvent& fin) override;
  // The schedule's rate, times the plateau's reductions.
  void set_step_learning_rate(int64_t step) override;
  bool record_step(StepEvent& ev, TrainingPosition& pos, int64_t batch, int64_t correct, EpochProgress& ep,
                   FinishedEvent& fin) override;
  bool record_step_at(float lr, StepEvent& ev, TrainingPosition& pos, int64_t batch, int64_t correct, EpochProgress& ep,
                      FinishedEvent& fin);

  void emit_run_started(int64_t steps_per_epoch);
  FinishedEvent finish_run(FinishedEvent fin, const TrainingPosition& pos);
  // Runs body; an error it throws becomes fin's failure message.
  static void fail_on_error(FinishedEvent& fin, const std::function<void()>& body);
  // Synchronous strategies: every replica takes its slice of each global batch.
  void run_epoch_sync(TrainingPosition& pos, int64_t steps_per_epoch, DistributedDataset& dist, EpochProgress& ep,
                      FinishedEvent& fin);
  // Puts a parameter-server run's weights into the model before evaluating
  // or saving; a no-op for other strategies.
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
  std::unique_ptr<ParameterServerRun> ps_;           // when the strategy is a ParameterServerStrategy
  std::unique_ptr<StepTracer> tracer_;               // with config_.trace.enabled (prepare())
  trace::TraceRecorder* recorder() const { return tracer_ ? tracer_->recorder() : nullptr; }
  // What accelerator replicas' devices ran, timed there (null when not tracing).
  trace::DeviceSpans device_spans_;
  // Null when not tracing, or when the schedule leaves this step unmarked.
  trace::DeviceSpans* device_spans() { return tracer_ && device_marks_ ? &device_spans_ : nullptr; }
  // Which steps are marked; device_marks_: this one is (run_epoch_sync).
  trace::DeviceLaneSchedule device_schedule_{config_.trace.device_lanes, config_.trace.device_burst_steps,
                                             config_.trace.device_period_seconds};
  bool device_marks_ = false;
  // Records the device spans whose work has completed (after a step's
  // synchronisation); with `marked_graph` >= 0 (StepGraph::marked_graph),
  // that graph's marks too, for `step`, which it replayed.
  void drain_device_spans(int64_t step = -1, int marked_graph = -1);
  int64_t traced_step_ = -1;  // the step run_step is running

  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::mutex pause_mutex_;
  std::condition_variable pause_cv_;
  double start_time_ = 0;
  double paused_seconds_ = 0;
};

}  // namespace strata
