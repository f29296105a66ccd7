#pragma once
// One training run as a front end starts it: prepare (every bad input
// surfaces here, before any file exists), check that every rank of a
// multi-worker run was given the same project, open the run folder (rank 0
// only) with its checkpoints and notes, restore a checkpoint, train.
// strata-run and the dashboard's EngineBridge both run through this, so
// the two cannot drift apart.
#include <memory>
#include <optional>
#include <string>

#include "project/RunNotes.h"
#include "train/Trainer.h"

namespace strata {

class RunDirectory;

struct RunFolderOptions {
  std::string dir;                // the run folder; empty: the run is not stored
  std::string resume_from;        // a checkpoint folder to continue from; empty: a new run
  std::optional<RunNotes> notes;  // given parts replace the folder's (a resumed run keeps the rest)
};

class RunSession {
public:
  // Events go to `sink` and, once open() made it, to the run folder.
  RunSession(RunConfig config, EventSink& sink);
  ~RunSession();

  // Loads the data and builds the model (Trainer::prepare); across
  // processes, bad_input unless every rank has the same project.
  void prepare();
  // Opens the run folder (on rank 0; other ranks write none) and restores
  // the checkpoint, if the options name them. Call after prepare().
  void open(const RunFolderOptions& options);
  FinishedEvent run() { return trainer_.run(); }

  Trainer& trainer() { return trainer_; }
  Cluster& cluster() { return trainer_.strategy().cluster(); }
  // The run folder open() made; null when the run is not stored here.
  const RunDirectory* directory() const { return dir_.get(); }
  // The checkpoint open() restored.
  const std::optional<CheckpointInfo>& resumed() const { return resumed_; }

private:
  void check_ranks_agree();

  FanOutSink sink_;
  Trainer trainer_;
  std::unique_ptr<RunDirectory> dir_;
  std::optional<CheckpointInfo> resumed_;
};

}  // namespace strata
