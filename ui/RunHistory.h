#pragma once
#include <optional>
#include <string>
#include <vector>

#include "RunSeries.h"
#include "project/RunNotes.h"

namespace strata::ui {

// A finished (or interrupted) run stored beside a project, as written by
// RunDirectory: "<dir>/<stem>.runs/<stamp>/events.jsonl". Qt-free.
struct RunRecord {
  std::string dir;    // the run folder
  std::string name;   // its folder name (the time stamp)
  RunNotes notes;     // run.json: the name given to it, notes, tags
  std::string notes_error;  // why run.json could not be read (the run is listed anyway)
  // The name to show: the one given, else the folder's.
  const std::string& display_name() const { return notes.name.empty() ? name : notes.name; }
  // Hyper-parameters from the run's config.json (empty/0 when it has none).
  int64_t batch_size = 0;
  std::string optimizer, lr_schedule;
  double learning_rate = 0;
  // Figures from its events.
  int epochs_completed = 0;
  int64_t steps = 0;
  std::optional<double> final_loss, final_val_accuracy, best_val_accuracy;
  // "mirrored x2 · completed · 48 steps · loss 0.123"; a parameter-server
  // run adds its servers and lost workers.
  std::string summary;
  std::string strategy;
  // How it ended; none: interrupted (its events stop before a finished event).
  std::optional<RunStatus> status;
  FailureKind failure = FailureKind::None;  // why, when it failed
  bool has_checkpoint = false;
  // completed, stopped or interrupted; a failed run says why ("failed: out
  // of device memory"), so the table answers the first question about it.
  std::string status_text() const;
  // Resume is offered for a run that did not complete and left a checkpoint.
  bool resumable() const { return has_checkpoint && status != RunStatus::Completed; }
};

// "<dir>/<stem>.runs" for a project path.
std::string runs_folder_for(const std::string& project_path);
// Every run folder holding an events.jsonl, newest first.
std::vector<RunRecord> list_runs(const std::string& project_path);
// Reads a run's events.jsonl; malformed lines are skipped and counted (a run
// killed mid-write may end with half a line).
RunSeries load_run(const std::string& run_dir, int* bad_lines = nullptr);
// A run's events up to and including `step` (run_started first, no
// finished): what the charts show before a resumed run continues. A resumed
// run's events.jsonl holds several attempts; later ones replace the steps
// of earlier ones they repeat.
std::vector<Event> events_until(const std::string& run_dir, int64_t step);

}  // namespace strata::ui
