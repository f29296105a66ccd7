#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/RunConfig.h"
#include "train/Trainer.h"

namespace strata::ui {

// One checkpoint folder of a run (checkpoints/ckpt-<step>), as listed in the
// evaluation view. Qt-free.
struct CheckpointEntry {
  std::string dir;
  int64_t step = 0;
  int epoch = 0;
  std::optional<double> val_accuracy;
  int val_epoch = 0;  // the epoch val_accuracy is from (0: not recorded, older checkpoints)
};

// Every valid checkpoint of a run folder, newest (highest step) first; an
// unreadable one is left out rather than failing the whole list.
std::vector<CheckpointEntry> list_checkpoints(const std::string& run_dir);
// True when the run folder has at least one valid checkpoint.
bool has_checkpoint(const std::string& run_dir);

// A test example with the model's prediction.
struct SamplePrediction {
  std::vector<uint8_t> pixels;  // rows*cols grey levels; empty for non-image data
  int rows = 0, cols = 0;
  int label = 0, predicted = 0;
};

struct CheckpointEvaluation {
  std::string checkpoint;
  std::string device;  // where it was evaluated (the host: see evaluate_checkpoint)
  std::string error;   // why the evaluation failed; the rest is empty then
  Trainer::Evaluation evaluation;
  std::vector<std::string> class_names;
  std::vector<SamplePrediction> samples;
};

// The run's config (its config.json, the project as it was run), with
// relative dataset paths resolved against base_dir.
RunConfig run_config(const std::string& run_dir, const std::string& base_dir);
// Loads the checkpoint's weights into a freshly prepared model and evaluates
// it on the test (validation) split, plus predictions for the first
// `samples` test examples, on the host whatever devices the run trained on:
// a run training meanwhile may be capturing its step as a CUDA graph on
// that GPU, and a capture takes in whatever any thread queues on the device.
// Slow (loads data, builds the model): call it off the UI thread. bad_input
// when the dataset has no test split.
CheckpointEvaluation evaluate_checkpoint(const RunConfig& config, const std::string& checkpoint, int samples);

}  // namespace strata::ui
