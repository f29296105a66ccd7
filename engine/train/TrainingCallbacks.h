#pragma once
// Keras' EarlyStopping and ReduceLROnPlateau, and the best epoch whose
// checkpoint is kept as "best", decided at the end of each epoch from its
// figures. Their state (bests, waits, the learning-rate scale) goes into
// every checkpoint, so a resumed run decides exactly as an unbroken one.
// Every rank of a multi-worker run sees the same reduced figures and so
// takes the same decisions without talking.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/RunConfig.h"

namespace strata {

struct EpochFigures {
  double loss = 0, accuracy = 0;
  std::optional<double> val_loss, val_accuracy;
};

class TrainingCallbacks {
public:
  explicit TrainingCallbacks(const TrainingConfig& config);

  struct Decision {
    std::optional<std::string> stop;  // why the run ends early
    std::vector<std::string> notes;   // e.g. the learning rate was reduced
    bool best = false;                // this epoch is the best so far (its checkpoint is kept)
  };
  // `lr`: the rate the epoch ended with (for the plateau's floor).
  Decision end_epoch(int epoch, const EpochFigures& figures, double lr);

  // Multiplies the schedule's rate (ReduceLROnPlateau's reductions so far).
  double lr_scale() const { return lr_scale_; }
  // The rate to use where the schedule says `scheduled`.
  double learning_rate(double scheduled) const;

  nlohmann::json state() const;
  void restore(const nlohmann::json& state);  // null: the initial state

private:
  // One monitored metric: lower is better for losses, higher for accuracies.
  struct Watch {
    std::string monitor;
    double min_delta = 0;
    std::optional<double> best;
    int best_epoch = 0, wait = 0;
    bool ties_improve = false;
    bool improves(double value) const;
  };
  static std::optional<double> read(const std::string& monitor, const EpochFigures& f);

  TrainingConfig config_;
  Watch stopping_, plateau_, best_checkpoint_;
  int cooldown_ = 0;
  double lr_scale_ = 1.0;
};

// Problems with the callbacks' settings, each naming its field; `has_validation`:
// whether the run has validation data for val_* monitors.
std::vector<std::string> check_callbacks(const TrainingConfig& config, bool has_validation);

}  // namespace strata
