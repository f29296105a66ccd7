#pragma once
#include <QString>
#include <QStringList>

namespace strata::ui {

// How a multi-worker run is launched: not part of the project (the same
// project runs on a laptop or a cluster), so the strategy panel keeps it.
struct MultiWorkerOptions {
  int processes = 2;      // mpirun -np
  QString hosts;          // "h1:2,h2:2" (mpirun --host); empty = this machine
  QString hostfile;       // mpirun --hostfile; wins over hosts
  bool oversubscribe = true;  // more ranks than cores (a laptop rehearsal)
};

// `mpirun` on PATH, or empty.
QString find_mpirun();
// strata-run next to the running executable (installed: bin/), else in the
// build tree's app/ (the tests and ui bench live in sibling folders).
QString find_strata_run();
// Why multi-worker runs cannot be launched from here, or empty: the engine
// must be built with MPI and mpirun must be on PATH.
QString multi_worker_unavailable_reason();

// The mpirun command line (without the program). run_dir: the run folder to
// write (or, with resume, to continue); empty = --no-run-dir.
QStringList mpirun_arguments(const MultiWorkerOptions& options, const QString& strata_run, const QString& project,
                             const QStringList& devices, const QString& run_dir, bool resume);

}  // namespace strata::ui
