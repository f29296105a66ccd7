#include "MultiWorkerLaunch.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <unistd.h>

#include "distribute/Cluster.h"

namespace strata::ui {

QString find_mpirun() { return QStandardPaths::findExecutable("mpirun"); }

QString find_strata_run() {
  const QDir here(QCoreApplication::applicationDirPath());
  for (const QString& candidate : {here.filePath("strata-run"), here.filePath("../app/strata-run"), here.filePath("../../app/strata-run")}) {
    const QFileInfo info(candidate);
    if (info.isFile() && info.isExecutable()) return info.canonicalFilePath();
  }
  return {};
}

QString multi_worker_unavailable_reason() {
  QStringList missing;
  if (!mpi_built()) missing << QObject::tr("this engine was built without MPI (configure with MPI found)");
  if (find_mpirun().isEmpty()) missing << QObject::tr("mpirun is not on PATH (install Open MPI)");
  if (find_strata_run().isEmpty()) missing << QObject::tr("strata-run was not found next to strata");
  if (missing.isEmpty()) return {};
  return QObject::tr("Not available: multi-worker runs are launched with mpirun, but %1.").arg(missing.join(QObject::tr("; and ")));
}

QStringList mpirun_arguments(const MultiWorkerOptions& options, const QString& strata_run, const QString& project,
                             const QStringList& devices, const QString& run_dir, bool resume) {
  QStringList args;
  // Open MPI refuses root unless told; containers often run as root.
  if (::geteuid() == 0) args << "--allow-run-as-root";
  if (options.oversubscribe) args << "--oversubscribe";
  args << "-np" << QString::number(options.processes);
  if (!options.hostfile.isEmpty()) args << "--hostfile" << options.hostfile;
  else if (!options.hosts.trimmed().isEmpty()) args << "--host" << options.hosts.simplified().remove(' ');
  args << strata_run << project << "--strategy" << "multi_worker_mirrored";
  if (!devices.isEmpty()) args << "--devices" << devices.join(',');
  args << "--events" << "jsonl";
  if (run_dir.isEmpty()) args << "--no-run-dir";
  else if (resume) args << "--resume" << run_dir;
  else args << "--run-dir" << run_dir;
  return args;
}

}  // namespace strata::ui
