#pragma once
#include <string>
#include <vector>

#include "RunSeries.h"

namespace strata::ui {

// A finished (or interrupted) run stored beside a project, as written by
// RunDirectory: "<dir>/<stem>.runs/<stamp>/events.jsonl". Qt-free.
struct RunRecord {
  std::string dir;    // the run folder
  std::string name;   // its folder name (the time stamp)
  // "mirrored x2 · completed · 48 steps · loss 0.123"; a parameter-server
  // run adds its servers and lost workers.
  std::string summary;
  std::string strategy;
  std::string status;   // completed, stopped, failed, interrupted
  bool has_checkpoint = false;
  // Resume is offered for a run that did not complete and left a checkpoint.
  bool resumable() const { return has_checkpoint && status != "completed"; }
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
