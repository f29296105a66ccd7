#pragma once
// Everything a training run needs, independent of the file it came from.
// project/ reads and validates *.strata files into this; the Trainer runs it.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/DeviceLaneSchedule.h"

namespace strata {

struct DatasetConfig {
  std::string kind = "fashion_mnist";  // fashion_mnist, idx, csv, synthetic
  std::string path;                    // fashion_mnist: directory (empty = auto)
  std::string train_images, train_labels, test_images, test_labels;  // idx
  std::string train_csv, test_csv;                                    // csv
  int label_column = -1;
  std::string header = "auto";  // auto, yes, no
  int64_t synthetic_examples = 2048;
  int64_t synthetic_features = 20;
  int synthetic_classes = 4;
  double validation_split = 0.0;  // fraction of train held out (else the test split validates)
  bool standardize = false;       // per-feature mean/std from the train split

  // Every field above that names a file or folder (relative ones resolve
  // against the project's folder): a new one must be listed here, beside
  // its declaration, for a project written elsewhere to keep finding it.
  std::vector<std::string*> paths() {
    return {&path, &train_images, &train_labels, &test_images, &test_labels, &train_csv, &test_csv};
  }
};

struct OptimizerConfig {
  std::string type = "adam";  // adam, sgd
  float learning_rate = 0.001f;
  float momentum = 0.0f;
  bool nesterov = false;
  float beta_1 = 0.9f, beta_2 = 0.999f, epsilon = 1e-7f;
};

// When checkpoints are written (into the run folder's checkpoints/) and
// which are kept: the newest `keep` plus the best by validation accuracy.
struct CheckpointConfig {
  int64_t every_steps = 0;  // 0 = not by steps
  bool every_epoch = true;
  int keep = 3;
  bool keep_best = true;
};

// How the learning rate moves over the run (train/LearningRateSchedule.h):
// constant; step (times `factor` every `every_epochs` epochs); exponential
// (times `decay_rate` per epoch, smoothly); cosine (to `min_lr` at the last
// step). Any of them may ramp up linearly over `warmup_epochs` first.
struct LrScheduleConfig {
  std::string type = "constant";  // constant, step, exponential, cosine
  double warmup_epochs = 0;
  int every_epochs = 10;    // step
  double factor = 0.5;      // step
  double decay_rate = 0.9;  // exponential, per epoch
  double min_lr = 0;        // cosine
};

// Keras' EarlyStopping: ends the run when `monitor` (loss, accuracy,
// val_loss, val_accuracy) has not improved by more than `min_delta` for
// `patience` epochs.
struct EarlyStoppingConfig {
  bool enabled = false;
  std::string monitor = "val_loss";
  int patience = 5;
  double min_delta = 0;
};

// Keras' ReduceLROnPlateau: multiplies the learning rate by `factor` when
// `monitor` has not improved by more than `min_delta` for `patience` epochs,
// then waits `cooldown` epochs; never below `min_lr`.
struct ReduceLrOnPlateauConfig {
  bool enabled = false;
  std::string monitor = "val_loss";
  double factor = 0.1;
  int patience = 3;
  double min_delta = 1e-4;
  int cooldown = 0;
  double min_lr = 0;
};

// STRATA_STEP_GRAPHS=0 turns step graphs off for every run of the process.
inline bool default_step_graphs() {
  const char* env = std::getenv("STRATA_STEP_GRAPHS");
  return !(env && env[0] == '0' && env[1] == '\0');
}

// STRATA_READ_LATE=0 makes every run of the process read each step's figures as it ends.
inline bool default_read_late() {
  const char* env = std::getenv("STRATA_READ_LATE");
  return !(env && env[0] == '0' && env[1] == '\0');
}

// STRATA_GRADIENT_BRANCH=0 keeps every run's weight gradients in order with the rest.
inline bool default_gradient_branches() {
  const char* env = std::getenv("STRATA_GRADIENT_BRANCH");
  return !(env && env[0] == '0' && env[1] == '\0');
}

struct TrainingConfig {
  int epochs = 10;
  int64_t batch_size = 128;  // global batch
  OptimizerConfig optimizer;
  std::string loss = "sparse_categorical_crossentropy";
  bool from_logits = true;
  uint64_t seed = 42;
  bool shuffle = true;
  bool drop_remainder = false;
  int threads = 0;                // CPU threads in all (0 = every core)
  int prefetch = 2;
  int64_t max_steps_per_epoch = 0;  // 0 = the whole dataset
  CheckpointConfig checkpoint;
  LrScheduleConfig lr_schedule;
  EarlyStoppingConfig early_stopping;
  ReduceLrOnPlateauConfig reduce_lr_on_plateau;
  // Capture each step as a device graph where the devices can (StepGraph);
  // off for debugging (strata-run --no-graphs, STRATA_STEP_GRAPHS=0). Not
  // saved in projects: how a run executes, not what it trains.
  bool step_graphs = default_step_graphs();
  // Read the figures of steps on accelerators one step late, while the next
  // step runs (StepStatsQueue); off for debugging (STRATA_READ_LATE=0):
  // each step then waits for its devices, so a device error is reported
  // at the step that caused it. Not saved in projects either.
  bool read_late = default_read_late();
  // Compute the weight gradients on a side branch of a GPU's work, beside
  // the input gradients (Backend::begin_branch; where one replica uses the
  // GPU); off for debugging and comparison (strata-run
  // --no-gradient-branches, STRATA_GRADIENT_BRANCH=0). Not saved in projects.
  bool gradient_branches = default_gradient_branches();
};

struct StrategyConfig {
  std::string name = "one_device";
  std::vector<std::string> devices;  // empty = the strategy's default
  std::string cross_device_ops = "auto";
  int64_t fusion_bytes = 4 << 20;
  std::string sharded_update = "auto";  // auto | on | off (StrategyOptions::sharded_update)
  double collective_timeout = 300;      // seconds a collective waits for the other workers (or NCCL GPUs)
  // parameter_server: servers, staleness bound (-1 = unbounded, 0 = synchronous)
  // and the minimum piece size when variables are split (0 = whole variables).
  int servers = 1;
  int staleness = -1;
  int64_t min_shard_bytes = 0;
  // Benchmarks and demonstrations (not saved in projects): replica
  // `straggler` takes `slowdown` times as long for each step, and
  // parameter-server worker `fail_worker` fails at its step `fail_worker_step`.
  int straggler = -1;
  double slowdown = 2.0;
  int fail_worker = -1;
  int64_t fail_worker_step = 0;
  int fail_server = -1;  // server `fail_server` fails at its update `fail_server_update`
  int64_t fail_server_update = 0;
  // Replica `fail_replica` of a synchronous strategy fails as the run's step
  // `fail_replica_step` starts, its peers going on into the step's
  // collectives; that step runs op by op (a replayed step graph runs no
  // host code), the graphs captured before it staying alive.
  int fail_replica = -1;
  int64_t fail_replica_step = 0;
};

// The step timeline (docs/timeline.md). How a run executes, not what it
// trains: never saved in projects.
struct TraceConfig {
  bool enabled = false;
  std::string file;  // a Chrome trace file to write ("" = none; under mpirun each rank writes its own)
  // The trace file's limit (0: none): about 440,000 steps of one replica's
  // host lanes. Perfetto's in-browser UI holds what fits in the browser's
  // memory (about 2 GB, its documentation says), and a run's folder must
  // keep room for its checkpoints.
  int64_t max_file_mib = 512;
  // Accelerators' device lanes (timing marks in their streams): in bursts of
  // steps (DeviceLaneSchedule), every step, or off (the host's lanes alone,
  // as a profiler's CPU-only activities).
  trace::DeviceLanes device_lanes = trace::DeviceLanes::Sampled;
  int device_burst_steps = trace::DeviceLaneSchedule::kBurstSteps;
  double device_period_seconds = trace::DeviceLaneSchedule::kPeriodSeconds;
};

struct RunConfig {
  std::string name = "untitled";
  // Directory that relative dataset paths are relative to (the project
  // file's); not saved.
  std::string base_dir;
  DatasetConfig dataset;
  std::vector<nlohmann::json> layers;
  TrainingConfig training;
  StrategyConfig strategy;
  TraceConfig trace;
};

}  // namespace strata
