#pragma once
// The engine's one typed event stream (docs/architecture.md §4; schema in docs/events.md).
// The same events feed the dashboard in-process, print as JSON Lines from
// `strata-run --events jsonl`, and are stored in every run folder.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "train/RunStatus.h"

namespace strata {

struct RunStartedEvent {
  std::string project;
  std::string strategy;
  std::vector<std::string> devices;  // one per replica, in replica order
  int replicas = 1;
  int64_t global_batch = 0;
  std::vector<int64_t> per_replica_batch;
  int64_t steps_per_epoch = 0;
  int epochs = 0;
  std::string dataset;
  int64_t train_examples = 0;
  int64_t validation_examples = 0;
  int64_t params = 0;
  std::string cross_device_ops;
  bool sharded_update = false;  // the optimizer update sharded across replicas (ZeRO-1)
  int threads_per_replica = 1;
  int workers = 1;                 // processes (MPI ranks)
  std::vector<std::string> hosts;  // per worker, rank order
  // parameter_server only: servers, the staleness bound (nullopt =
  // unbounded) and which server holds which variables.
  int servers = 0;
  std::optional<int> staleness_bound;
  std::string shards;
};

struct StepEvent {
  int64_t step = 0;        // 1-based, counted over the whole run
  int epoch = 0;           // 1-based
  int64_t epoch_step = 0;  // 1-based within the epoch
  double time = 0;         // seconds since the run started
  // Each replica's mean loss over its own examples, in replica order.
  std::vector<double> replica_losses;
  double loss = 0;  // reduced: mean over the global batch
  // Training accuracy over the step's global batch (NaN in streams written
  // before it existed).
  double accuracy = std::numeric_limits<double>::quiet_NaN();
  double lr = 0;
  double samples_per_sec = 0;
  // Per worker process (rank order): seconds of the step spent computing,
  // i.e. not waiting in collectives. A straggler has the largest value.
  std::vector<double> worker_step_times;
  // Per replica (rank-major), the same measure: a slow replica among a
  // worker's own shows here. Empty when the step ran as one captured graph
  // (its replicas' work is not timed apart).
  std::vector<double> replica_step_times;
  // parameter_server only. A step is one global batch (a round) whose slices
  // are all applied. staleness: the largest over its slices of how many
  // earlier rounds were missing from the weights a worker read (<= the
  // bound); worker_steps: slices each worker has finished in all;
  // lost_workers: workers that failed; server_updates_per_sec: per server,
  // since the previous step event.
  std::optional<int> staleness;
  std::vector<int64_t> worker_steps;
  std::vector<int> lost_workers;
  std::vector<double> server_updates_per_sec;
};

struct EpochEvent {
  int epoch = 0;
  double loss = 0, accuracy = 0;
  std::optional<double> val_loss, val_accuracy;
  double time = 0;
  double samples_per_sec = 0;
  double lr = 0;      // the learning rate the epoch ended with (0 in older streams)
  bool best = false;  // the best validation accuracy so far: its checkpoint is kept as the best
};

struct DeviceStat {
  std::string device;
  std::optional<double> utilization;  // 0..1
  std::optional<int64_t> memory_used, memory_total;
};

struct DeviceStatsEvent {
  double time = 0;
  std::vector<DeviceStat> devices;
};

struct LogEvent {
  std::string level = "info";  // info, warning, error
  std::string message;
  double time = 0;
};

struct CheckpointEvent {
  std::string path;
  int64_t step = 0;
  int epoch = 0;
  double time = 0;
};

struct FinishedEvent {
  RunStatus status = RunStatus::Completed;
  FailureKind failure = FailureKind::None;  // what kind, when status is Failed
  std::string message;
  double time = 0;
  int64_t steps = 0;
  int epochs_completed = 0;
  // Completed before its last epoch because early stopping ended it (the
  // message says why).
  bool stopped_early = false;
};

// Where one step's time went, per lane of the timeline (tracing on;
// docs/timeline.md): exclusive milliseconds of each span kind.
struct StepSpansEvent {
  int64_t step = 0;
  double time = 0;
  std::vector<std::string> lanes;            // "replica 0", ..., display order
  std::vector<double> step_ms;               // each lane's whole step (0: no step frame, e.g. the run lane)
  std::vector<std::string> kinds;            // the span kinds that occurred ("forward", "all_reduce", ...)
  std::vector<std::vector<double>> kind_ms;  // [kind][lane]
  std::string slowest;                       // the replica the others waited for ("" with one)
  double comm_ms = 0, comm_hidden_ms = 0;    // collectives, and the part behind forward/backward
};

using Event = std::variant<RunStartedEvent, StepEvent, EpochEvent, DeviceStatsEvent, LogEvent, CheckpointEvent, FinishedEvent,
                           StepSpansEvent>;

// The "type" tag of an event.
const char* event_type(const Event& e);

// Where events go. emit() is called on the training thread and must not
// block on a UI: queue and return.
class EventSink {
public:
  virtual ~EventSink() = default;
  virtual void emit(const Event& event) = 0;
};

// Discards every event: for tools that build a Trainer only to load data,
// build the model or evaluate (evaluation, export, benchmarks).
class NullSink final : public EventSink {
public:
  void emit(const Event&) override {}
};

// Forwards to several sinks (run folder + console + dashboard).
class FanOutSink final : public EventSink {
public:
  void add(EventSink* sink) { sinks_.push_back(sink); }
  // Ahead of the others: a sink whose effects the others' readers look for.
  void add_first(EventSink* sink) { sinks_.insert(sinks_.begin(), sink); }
  void emit(const Event& event) override {
    for (auto* s : sinks_) s->emit(event);
  }

private:
  std::vector<EventSink*> sinks_;
};

}  // namespace strata
