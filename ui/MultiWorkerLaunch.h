#pragma once
#include <QString>
#include <QStringList>

#include "train/RunConfig.h"

namespace strata::ui {

// How a run across processes is launched: not part of the project (the same
// project runs on a laptop or a cluster), so the strategy panel keeps it.
struct MultiWorkerOptions {
  int processes = 2;      // worker processes (mpirun -np, plus the servers for parameter_server)
  QString hosts;          // "h1:2,h2:2" (mpirun --host); empty = this machine
  QString hostfile;       // mpirun --hostfile; wins over hosts
  bool oversubscribe = true;  // more ranks than cores (a laptop rehearsal)
  // parameter_server only: servers and workers as mpirun ranks instead of
  // threads of this process (multi_worker_mirrored always uses mpirun).
  bool parameter_server_processes = false;
};

// `mpirun` on PATH, or empty.
QString find_mpirun();
// strata-run next to the running executable (installed: bin/), else in the
// build tree's app/ (the tests and ui bench live in sibling folders).
QString find_strata_run();
// Why multi-worker runs cannot be launched from here, or empty: the engine
// must be built with MPI and mpirun must be on PATH.
QString multi_worker_unavailable_reason();
// The same check for a parameter-server run across processes.
QString parameter_server_processes_unavailable_reason();

// Why these options cannot be handed to mpirun, or empty: hosts must be
// `name[:slots]` entries and a hostfile a readable file of `name [slots=N]
// [max_slots=N]` lines, so nothing a user pastes (or a shared setup carries)
// can smuggle an option or a command onto mpirun's command line.
QString launch_options_problem(const MultiWorkerOptions& options);

// mpirun options that make Open MPI notice a host it can no longer reach
// (a cut link, a powered-off machine) within half the collective timeout and
// end the job naming it, instead of waiting on TCP for a quarter of an hour.
QStringList lost_host_detection_arguments(double collective_timeout);

// Whether this run goes to mpirun rather than the in-process engine bridge.
bool launches_with_mpirun(const StrategyConfig& strategy, const MultiWorkerOptions& options);

// The mpirun command line (without the program), for multi_worker_mirrored
// or parameter_server (by strategy.name); the one place such lines are
// built. run_dir: the run folder to write (or, with resume, to continue);
// empty = --no-run-dir.
QStringList mpirun_arguments(const MultiWorkerOptions& options, const QString& strata_run, const QString& project,
                             const StrategyConfig& strategy, const QString& run_dir, bool resume);

}  // namespace strata::ui
