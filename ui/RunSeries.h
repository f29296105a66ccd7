#pragma once
#include <optional>
#include <string>
#include <vector>

#include "train/Events.h"

namespace strata::ui {

// One run's metrics as columns, built from its events. The live run and the
// runs reloaded from a project's history share this, so charts and CSV export
// see the same data whichever way it arrived. Qt-free.
struct RunSeries {
  std::string label;  // shown in legends ("live", run folder name)
  std::optional<RunStartedEvent> started;
  // Per step, all the same length.
  std::vector<double> step, epoch_pos, time, loss, accuracy, lr, samples_per_sec;
  std::vector<std::vector<double>> replica_loss;  // [replica][step]
  std::vector<EpochEvent> epochs;
  std::optional<FinishedEvent> finished;
  // Index of the first non-finite reduced loss, if any.
  std::optional<size_t> diverged_at;
  // parameter_server runs only (empty otherwise). Per step, like the columns
  // above (NaN where a step lacks the figure): the largest staleness of the
  // gradients applied and each server's update rate. Per worker: slices
  // finished as of the last step, and the step that first reported it lost.
  std::vector<double> staleness;
  std::vector<std::vector<double>> server_updates;  // [server][step]
  std::vector<int64_t> worker_steps;
  std::vector<std::optional<int64_t>> lost_at;

  void add(const Event& event);
  size_t replicas() const { return replica_loss.size(); }
  bool is_parameter_server() const { return (started && started->servers > 0) || !staleness.empty(); }
  int lost_worker_count() const;
  // Fractional epoch of a step: epoch 1, half way = 0.5; the x axis "epoch".
  double epoch_position(const StepEvent& s) const;
};

}  // namespace strata::ui
