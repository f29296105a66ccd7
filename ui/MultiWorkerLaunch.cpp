#include "MultiWorkerLaunch.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <unistd.h>

#include "distribute/Cluster.h"

namespace strata::ui {

namespace {
const char* kParameterServer = "parameter_server";

// What is missing to launch ranks with mpirun; `what` names the kind of run.
QString unavailable_reason(const QString& what) {
  QStringList missing;
  if (!mpi_built()) missing << QObject::tr("this engine was built without MPI (configure with MPI found)");
  if (find_mpirun().isEmpty()) missing << QObject::tr("mpirun is not on PATH (install Open MPI)");
  if (find_strata_run().isEmpty()) missing << QObject::tr("strata-run was not found next to strata");
  if (missing.isEmpty()) return {};
  return QObject::tr("Not available: %1 are launched with mpirun, but %2.").arg(what, missing.join(QObject::tr("; and ")));
}
}  // namespace

QString find_mpirun() { return QStandardPaths::findExecutable("mpirun"); }

QString find_strata_run() {
  const QDir here(QCoreApplication::applicationDirPath());
  for (const QString& candidate : {here.filePath("strata-run"), here.filePath("../app/strata-run"), here.filePath("../../app/strata-run")}) {
    const QFileInfo info(candidate);
    if (info.isFile() && info.isExecutable()) return info.canonicalFilePath();
  }
  return {};
}

QString multi_worker_unavailable_reason() { return unavailable_reason(QObject::tr("multi-worker runs")); }

QString parameter_server_processes_unavailable_reason() {
  return unavailable_reason(QObject::tr("parameter-server runs across processes"));
}

bool launches_with_mpirun(const StrategyConfig& strategy, const MultiWorkerOptions& options) {
  if (strategy.name == "multi_worker_mirrored") return true;
  return strategy.name == kParameterServer && options.parameter_server_processes;
}

QStringList mpirun_arguments(const MultiWorkerOptions& options, const QString& strata_run, const QString& project,
                             const StrategyConfig& strategy, const QString& run_dir, bool resume) {
  const bool ps = strategy.name == kParameterServer;
  QStringList args;
  // Open MPI refuses root unless told; containers often run as root.
  if (::geteuid() == 0) args << "--allow-run-as-root";
  if (options.oversubscribe) args << "--oversubscribe";
  // A parameter-server run outlives a lost worker, but by default mpirun
  // kills the whole job when any rank dies. With recovery on it no longer
  // does — and exits 0 even when a rank failed, so the run's status comes
  // from rank 0's finished event, never from mpirun's exit code.
  if (ps) args << "--enable-recovery";
  // Parameter servers are ranks [0, servers), so the worker count the user
  // chose comes on top of them.
  const int ranks = options.processes + (ps ? strategy.servers : 0);
  args << "-np" << QString::number(ranks);
  if (!options.hostfile.isEmpty()) args << "--hostfile" << options.hostfile;
  else if (!options.hosts.trimmed().isEmpty()) args << "--host" << options.hosts.simplified().remove(' ');
  args << strata_run << project << "--strategy" << QString::fromStdString(strategy.name);
  if (ps) {
    // Also in the saved project; on the command line they are visible in the
    // log and win over whatever the file says.
    args << "--servers" << QString::number(strategy.servers);
    args << "--staleness" << (strategy.staleness < 0 ? QStringLiteral("inf") : QString::number(strategy.staleness));
    args << "--min-shard-bytes" << QString::number(strategy.min_shard_bytes);
  }
  QStringList devices;
  for (const auto& d : strategy.devices) devices << QString::fromStdString(d);
  // Every rank gets the same list: a multi-worker rank's replica devices, a
  // parameter-server worker's one device (the engine rejects more).
  if (!devices.isEmpty()) args << "--devices" << devices.join(',');
  args << "--events" << "jsonl";
  if (run_dir.isEmpty()) args << "--no-run-dir";
  else if (resume) args << "--resume" << run_dir;
  else args << "--run-dir" << run_dir;
  return args;
}

}  // namespace strata::ui
