#include "MultiWorkerLaunch.h"

#include <algorithm>
#include <cmath>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
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

namespace {
bool valid_host_name(const QString& name) {
  static const QRegularExpression re(QStringLiteral("^[A-Za-z0-9]([A-Za-z0-9.-]{0,252}[A-Za-z0-9])?$"));
  return re.match(name).hasMatch();
}
bool positive_count(const QString& text) {
  bool ok = false;
  const int n = text.toInt(&ok);
  return ok && n > 0;
}
}  // namespace

QString launch_options_problem(const MultiWorkerOptions& o) {
  if (o.processes < 1) return QObject::tr("processes: must be at least 1, got %1").arg(o.processes);
  if (!o.hostfile.isEmpty()) {
    const QFileInfo info(o.hostfile);
    if (!info.isFile() || !info.isReadable())
      return QObject::tr("hostfile %1: not a readable file").arg(o.hostfile);
    QFile f(o.hostfile);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text) || f.size() > (1 << 20))
      return QObject::tr("hostfile %1: cannot be read (or larger than 1 MiB)").arg(o.hostfile);
    int line_no = 0;
    while (!f.atEnd()) {
      ++line_no;
      QString line = QString::fromUtf8(f.readLine());
      line = line.left(line.indexOf('#')).simplified();  // comments and blank lines
      if (line.isEmpty()) continue;
      const QStringList words = line.split(' ');
      bool ok = valid_host_name(words.front());
      for (int i = 1; ok && i < words.size(); ++i) {
        const QStringList kv = words[i].split('=');
        ok = kv.size() == 2 && QStringList{"slots", "max_slots", "max-slots"}.contains(kv[0]) && positive_count(kv[1]);
      }
      if (!ok)
        return QObject::tr("hostfile %1, line %2: expected `host [slots=N] [max_slots=N]`, got `%3`")
            .arg(o.hostfile)
            .arg(line_no)
            .arg(line);
    }
    return {};
  }
  const QString hosts = o.hosts.simplified().remove(' ');
  if (hosts.isEmpty()) return {};
  for (const QString& entry : hosts.split(',')) {
    const QStringList parts = entry.split(':');
    if (parts.size() > 2 || !valid_host_name(parts[0]) || (parts.size() == 2 && !positive_count(parts[1])))
      return QObject::tr("hosts: `%1` is not a host name with an optional :slots count (e.g. node1:4)").arg(entry);
  }
  return {};
}

QStringList lost_host_detection_arguments(double collective_timeout) {
  // When the network to a host goes, a rank notices within the collective
  // timeout and aborts, but mpirun then waits to hear from that host's
  // daemon: TCP retransmits for ~15 minutes before giving up. Keepalive
  // probes on mpirun's own connections to its daemons (idle while training
  // runs) find a silent host within half the collective timeout instead;
  // mpirun then ends the job naming the host, and the far daemon, cut off
  // from mpirun, ends its ranks (measured on a cut link: tests/netns,
  // docs/reliability.md). Probes are answered by the peer's kernel, so a
  // busy host is never mistaken for a lost one.
  const auto seconds = [](double s) { return QString::number(std::max(1, static_cast<int>(std::lround(s)))); };
  return {"--mca", "oob_tcp_keepalive_time",   seconds(collective_timeout / 4),
          "--mca", "oob_tcp_keepalive_intvl",  seconds(collective_timeout / 20),
          "--mca", "oob_tcp_keepalive_probes", "5"};
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
  args << lost_host_detection_arguments(strategy.collective_timeout);
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
