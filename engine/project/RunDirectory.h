#pragma once
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "train/Events.h"
#include "train/RunConfig.h"
#include "train/StepFlushPolicy.h"

namespace strata {

// One run's folder: config.json (the project as run), events.jsonl (every
// event, one JSON object a line) and metrics.json (final figures, written
// atomically when the run finishes). It is an EventSink, so the Trainer
// writes it like any other consumer.
class RunDirectory final : public EventSink {
public:
  // Creates `dir` (and parents); bad_input naming the folder if it cannot.
  // resume: append to an existing run's events instead of starting afresh.
  RunDirectory(std::string dir, const RunConfig& config, bool resume = false);
  ~RunDirectory() override;
  const std::string& path() const { return dir_; }
  void emit(const Event& event) override;

  // "<project dir>/<project stem>.runs/<YYYYmmdd-HHMMSS>[-N]": beside the project.
  static std::string default_for(const std::string& project_path);
  // The project's run folders, oldest first.
  static std::vector<std::string> runs_of(const std::string& project_path);
  std::string checkpoints() const { return dir_ + "/checkpoints"; }

private:
  std::string dir_;
  std::ofstream events_;
  StepFlushPolicy flush_{std::chrono::seconds(1)};
  EpochEvent last_epoch_;
  bool have_epoch_ = false;
  RunStartedEvent started_;
};

}  // namespace strata
