#include "ProcessBridge.h"

#include <QDir>
#include <QFile>
#include <csignal>

#include "train/EventJson.h"

namespace strata::ui {

ProcessBridge::ProcessBridge(QObject* parent) : RunBridge(parent) {
  timer_.setInterval(33);
  connect(&timer_, &QTimer::timeout, this, &ProcessBridge::drain);
  connect(&process_, &QProcess::readyReadStandardOutput, this, &ProcessBridge::readStdout);
  connect(&process_, &QProcess::readyReadStandardError, this, &ProcessBridge::readStderr);
  connect(&process_, &QProcess::finished, this, &ProcessBridge::onExited);
  connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;
    running_ = false;
    timer_.stop();
    Q_EMIT runningChanged(false);
    Q_EMIT prepareFailed(tr("cannot start %1: %2").arg(process_.program(), process_.errorString()));
  });
}

ProcessBridge::~ProcessBridge() {
  // Never leave ranks behind when the window goes: stop them gracefully and
  // give them the time a checkpoint takes, then kill.
  if (process_.state() == QProcess::NotRunning) return;
  stop();
  if (!process_.waitForFinished(15000)) {
    process_.kill();
    process_.waitForFinished(3000);
  }
}

void ProcessBridge::start(const QString& program, const QStringList& arguments) {
  if (running_) return;
  out_buffer_.clear();
  err_buffer_.clear();
  pending_.clear();
  recent_errors_.clear();
  started_ = finished_ = stop_requested_ = false;
  running_ = true;
  Q_EMIT runningChanged(true);
  process_.start(program, arguments);
  timer_.start();
}

namespace {
// The processes mpirun started on this machine (its direct children: Open
// MPI 4 forks local ranks itself), from /proc.
QList<pid_t> children_of(qint64 pid) {
  QList<pid_t> out;
  const QDir tasks(QStringLiteral("/proc/%1/task").arg(pid));
  for (const QString& task : tasks.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    QFile f(tasks.filePath(task + "/children"));
    if (!f.open(QIODevice::ReadOnly)) continue;
    for (const QByteArray& id : f.readAll().simplified().split(' '))
      if (!id.isEmpty()) out << static_cast<pid_t>(id.toLongLong());
  }
  return out;
}
}  // namespace

bool ProcessBridge::stillRunning(pid_t mpirun) const {
  // A timer armed for one run must not act on the next one's process.
  return process_.state() != QProcess::NotRunning && static_cast<pid_t>(process_.processId()) == mpirun;
}

void ProcessBridge::stop() {
  if (process_.state() == QProcess::NotRunning || stop_requested_) return;
  stop_requested_ = true;
  const auto mpirun = static_cast<pid_t>(process_.processId());
  // Open MPI 4's mpirun treats SIGINT and SIGTERM as "abort the job": it
  // kills the ranks at once (SIGTERM, then SIGKILL a second later), so they
  // never get to finish the step, checkpoint and report "stopped"; stdout is
  // cut before rank 0's finished event. The ranks themselves stop
  // gracefully on SIGTERM, so the local ones get it directly; their exit
  // (130) then ends mpirun. Ranks on other hosts learn of the stop from the
  // local ones over MPI. Without local ranks (all remote), or if the
  // graceful stop has not ended the job after a grace period, mpirun gets
  // SIGINT: the run ends at once and is reported as stopped here.
  const QList<pid_t> ranks = children_of(mpirun);
  for (pid_t rank : ranks) ::kill(rank, SIGTERM);
  const int grace_ms = ranks.isEmpty() ? 0 : 60000;
  QTimer::singleShot(grace_ms, this, [this, mpirun] {
    if (stillRunning(mpirun)) ::kill(mpirun, SIGINT);
  });
}

void ProcessBridge::readStdout() {
  out_buffer_ += process_.readAllStandardOutput();
  qsizetype nl;
  while ((nl = out_buffer_.indexOf('\n')) >= 0) {
    const QByteArray line = out_buffer_.left(nl).trimmed();
    out_buffer_.remove(0, nl + 1);
    if (line.isEmpty()) continue;
    try {
      Event e = event_from_jsonl(line.toStdString());
      if (std::holds_alternative<RunStartedEvent>(e)) started_ = true;
      if (std::holds_alternative<FinishedEvent>(e) && !finished_) {
        finished_ = true;
        endLingeringMpirun();
      }
      pending_.push_back(std::move(e));
    } catch (const std::exception&) {
      // Not an event (a library printing to stdout): keep it visible.
      Q_EMIT logLine("info", QString::fromUtf8(line));
    }
  }
}

void ProcessBridge::endLingeringMpirun() {
  // Rank 0 has said how the run ended, yet mpirun can stay: with
  // --enable-recovery (parameter-server runs) Open MPI 4.1 keeps waiting for
  // the ranks of a host it lost, for ever. After a grace period for the
  // ranks to exit normally, mpirun gets SIGINT twice (its "abort, then abort
  // forcibly" path), then SIGKILL, so the dashboard never shows a finished
  // run as running.
  const auto mpirun = static_cast<pid_t>(process_.processId());
  QTimer::singleShot(exit_grace_ms_, this, [this, mpirun] {
    if (!stillRunning(mpirun)) return;
    Q_EMIT logLine("warning", tr("mpirun has not exited %1 s after the run finished (a host it can no longer "
                                 "reach?); ending it")
                                  .arg(exit_grace_ms_ / 1000.0));
    ::kill(mpirun, SIGINT);
    QTimer::singleShot(1000, this, [this, mpirun] {
      if (stillRunning(mpirun)) ::kill(mpirun, SIGINT);
    });
    QTimer::singleShot(5000, this, [this, mpirun] {
      if (stillRunning(mpirun)) process_.kill();
    });
  });
}

void ProcessBridge::readStderr() {
  err_buffer_ += process_.readAllStandardError();
  qsizetype nl;
  while ((nl = err_buffer_.indexOf('\n')) >= 0) {
    const QString line = QString::fromUtf8(err_buffer_.left(nl)).trimmed();
    err_buffer_.remove(0, nl + 1);
    if (line.isEmpty()) continue;
    recent_errors_ << line;
    if (recent_errors_.size() > 20) recent_errors_.removeFirst();
    Q_EMIT logLine(line.contains("error", Qt::CaseInsensitive) ? "error" : "warning", line);
  }
}

void ProcessBridge::drain() {
  if (pending_.empty()) return;
  std::vector<Event> batch;
  batch.swap(pending_);
  Q_EMIT events(batch);
}

void ProcessBridge::onExited(int code, QProcess::ExitStatus status) {
  readStdout();
  readStderr();
  if (!err_buffer_.trimmed().isEmpty()) {
    err_buffer_ += '\n';
    readStderr();
  }
  timer_.stop();
  // The exit code only explains; it never decides the run's status. With
  // --enable-recovery (parameter-server runs) mpirun exits 0 even when ranks
  // failed, so how the run ended is rank 0's finished event, or, without
  // one, whether a stop was asked for.
  const QString why = status == QProcess::CrashExit ? tr("mpirun crashed") : tr("mpirun exited with code %1").arg(code);
  const QString detail = recent_errors_.isEmpty() ? why : why + ":\n" + recent_errors_.join('\n');
  if (!started_ && !finished_) {
    // A bad launch or a project the ranks refused: nothing ran.
    pending_.clear();
    running_ = false;
    Q_EMIT runningChanged(false);
    Q_EMIT prepareFailed(detail);
    return;
  }
  if (!finished_) {
    // Ranks killed (or mpirun's own kill after a stop) before rank 0 could
    // say how the run ended: end it here, so the panels do not wait forever.
    FinishedEvent f;
    // Without rank 0's word the job ended because a rank or its host went
    // away (a rank's own failure would have been reported by rank 0).
    f.status = stop_requested_ ? RunStatus::Stopped : RunStatus::Failed;
    if (!stop_requested_) f.failure = FailureKind::WorkerLost;
    f.message = detail.toStdString();
    pending_.push_back(f);
  }
  drain();
  running_ = false;
  Q_EMIT runningChanged(false);
}

}  // namespace strata::ui
