#pragma once
#include <QProcess>
#include <QTimer>
#include <sys/types.h>
#include <vector>

#include "RunBridge.h"

namespace strata::ui {

// Follows a training run in a child process (mpirun … strata-run --events
// jsonl): each stdout line is one event (docs/events.md), parsed with the
// engine's own reader and delivered in the same ~30 Hz batches as the
// in-process EngineBridge, so the charts and status code cannot tell the
// two apart. stderr lines (other ranks' warnings, mpirun's own messages)
// come out as `logLine`. The run's status is the stream's finished event,
// never mpirun's exit code (0 under --enable-recovery whatever the ranks
// did).
class ProcessBridge final : public RunBridge {
  Q_OBJECT
public:
  explicit ProcessBridge(QObject* parent = nullptr);
  ~ProcessBridge() override;
  void start(const QString& program, const QStringList& arguments);
  // Graceful: SIGTERM to the local ranks, which finish the current step,
  // agree over MPI to stop, checkpoint and exit 130 (see the .cpp for why
  // not SIGINT to mpirun, which is only the fallback).
  void stop() override;
  bool running() const override { return running_; }
  qint64 pid() const { return process_.processId(); }
  void setInterval(int ms) override { timer_.setInterval(ms); }
  // How long mpirun may outlive rank 0's finished event before it is ended
  // (see endLingeringMpirun).
  void setExitGrace(int ms) { exit_grace_ms_ = ms; }

private:
  void readStdout();
  void readStderr();
  void drain();
  void onExited(int code, QProcess::ExitStatus status);
  void endLingeringMpirun();
  bool stillRunning(pid_t mpirun) const;

  QProcess process_;
  QTimer timer_;
  QByteArray out_buffer_, err_buffer_;
  std::vector<Event> pending_;
  QStringList recent_errors_;  // the last stderr lines, for a failure message
  bool running_ = false;
  bool started_ = false;   // a run_started event arrived
  bool finished_ = false;  // a finished event arrived
  bool stop_requested_ = false;
  int exit_grace_ms_ = 20000;
};

}  // namespace strata::ui
