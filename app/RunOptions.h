#pragma once
// strata-run's command line: what to do, where the run goes, and the project
// settings the flags override (applied once the project is loaded, so the
// project's own checks and the Trainer's see the final values).
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "project/RunNotes.h"
#include "train/RunConfig.h"

namespace strata {

struct RunOptions {
  enum class Command { Train, Help, Version, ListDevices, MergeTraces };
  Command command = Command::Train;
  std::string project_path;
  std::string events = "text";  // text or jsonl
  std::string run_dir;          // empty: PROJECT.runs/<time>
  bool no_run_dir = false;
  bool resume = false;
  std::string resume_run;              // empty with resume: the latest run
  std::string evaluate;                // --evaluate CHECKPOINT
  std::string export_from, export_to;  // --export-weights CHECKPOINT OUT
  std::optional<RunNotes> run_notes;   // --run-name, --tags
  std::vector<std::string> merge_inputs;  // --merge-traces OUT IN...: merge_inputs, into merge_output
  std::string merge_output;
  std::vector<std::function<void(RunConfig&)>> overrides;

  void apply(RunConfig& config) const {
    for (const auto& o : overrides) o(config);
  }
};

// bad_input naming the flag for anything malformed; stops at --help,
// --version and --list-devices, which need nothing else.
RunOptions parse_run_options(int argc, char** argv);
void print_usage(std::FILE* out);

}  // namespace strata
