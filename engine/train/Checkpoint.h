#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/Optimizer.h"
#include "nn/Sequential.h"
#include "train/RunConfig.h"

namespace strata {

// Where training stands: enough to continue exactly (with the data order a
// function of (seed, epoch), the position is epoch + batch index).
struct TrainingPosition {
  int64_t step = 0;        // steps completed over the run
  int epoch = 1;           // 1-based epoch the position is in
  int64_t epoch_step = 0;  // steps completed in that epoch
  bool epoch_complete = false;  // the epoch (and its validation) is finished
  double epoch_loss_sum = 0;    // running sums of the epoch's training metrics
  int64_t epoch_correct = 0, epoch_seen = 0;
  double elapsed = 0;  // training seconds so far
  // The epoch-end callbacks' state (TrainingCallbacks::state()), so a
  // resumed run stops early and reduces its learning rate exactly as an
  // unbroken one; null before the first epoch ends.
  nlohmann::json callbacks;
};

// The latest validation figures when a checkpoint is written, and the epoch
// they are from (a mid-epoch checkpoint carries the previous epoch's).
struct ValidationFigures {
  std::optional<double> loss, accuracy;
  int epoch = 0;
};

struct CheckpointInfo {
  std::string dir;
  TrainingPosition position;
  std::optional<double> val_loss, val_accuracy;
  int val_epoch = 0;  // the epoch val_* are from (0: unknown, older checkpoints)
  std::string strategy, optimizer, project_hash;
  int replicas = 1;
};

// A checkpoint is a folder ckpt-<step>/ holding model.safetensors (every
// model variable, by name, as replica 0 holds it), optimizer.safetensors
// (slot variables, the step counter in the metadata) and state.json
// (position, metrics, per-layer extra state, the files' checksums), written
// in that order, each atomically. state.json last makes the folder valid;
// then the "latest" pointer moves. A kill at any moment leaves the previous
// checkpoint as latest. Variables are stored once, not per replica, so a
// checkpoint loads under any strategy and replica count.
class CheckpointManager {
public:
  CheckpointManager(std::string root, CheckpointConfig config);
  const std::string& root() const { return root_; }
  // Writes a checkpoint, moves "latest" and prunes old ones; returns its folder.
  std::string save(nn::Sequential& model, nn::Optimizer& optimizer, const TrainingPosition& position,
                   const ValidationFigures& validation, const std::string& strategy, int replicas,
                   const std::string& project_hash);

  // The newest valid checkpoint under root, or nothing.
  static std::optional<std::string> latest(const std::string& root);
  // Restores weights (all replica components), optimizer state (if given) and
  // layer state. bad_input naming the file and tensor on any mismatch; the
  // model is untouched if anything is wrong.
  static CheckpointInfo load(const std::string& dir, nn::Sequential& model, nn::Optimizer* optimizer);
  static CheckpointInfo read_info(const std::string& dir);
  // Accepts a checkpoint folder, a run folder (its latest checkpoint) or a
  // checkpoints/ folder; bad_input if none is found there.
  static std::string resolve(const std::string& path);
  // Loads weights only, from a checkpoint folder or a .safetensors file.
  static void load_weights(const std::string& path, nn::Sequential& model);
  // Writes the model's weights as one standalone safetensors file.
  static void export_weights(const std::string& checkpoint, nn::Sequential& model, const std::string& out,
                             const std::string& project_name);

private:
  void write_files(const std::filesystem::path& dir, nn::Sequential& model, nn::Optimizer& optimizer,
                   const TrainingPosition& position, const ValidationFigures& validation,
                   const std::string& strategy, int replicas, const std::string& hash);
  void prune();

  std::string root_;
  CheckpointConfig config_;
};

// Stable hash of the parts of a project that change the meaning of weights
// (model, data, optimizer), for "resuming a different project" warnings.
std::string project_hash(const RunConfig& config);

}  // namespace strata
