#pragma once
#include <QObject>
#include <QString>
#include <QTemporaryDir>
#include <memory>
#include <vector>

#include "MultiWorkerLaunch.h"
#include "train/Events.h"
#include "train/RunConfig.h"

namespace strata::ui {
class TimelinePanel;

class ChartsPanel;
class EngineBridge;
class LogPanel;
class ProcessBridge;
class RunBridge;
class StatusPanel;

// Connects one training run to the panels that show it: starts the engine
// bridge (with a run folder beside the project when it has a file), or, for
// a multi-worker run or a parameter-server run across processes, mpirun as
// a child process; routes each delivered
// batch of events, from either, to the charts, status and log through the
// same code, and reports the end.
class RunController : public QObject {
  Q_OBJECT
public:
  RunController(ChartsPanel* charts, StatusPanel* status, LogPanel* log, QObject* parent = nullptr);
  ~RunController() override;
  // project_path empty: an unsaved project, so the run is not stored.
  void start(const RunConfig& config, const QString& project_path, const MultiWorkerOptions& workers = {});
  // Continues a stopped or failed run from its latest checkpoint, in the
  // same folder; the charts first show the run up to that checkpoint.
  void resumeRun(const RunConfig& config, const QString& run_dir, const MultiWorkerOptions& workers = {});
  void pause();
  void resume();
  void stop();
  bool running() const;
  bool paused() const;
  // Pause exists only in-process: mpirun cannot hold ranks between steps.
  bool canPause() const;
  // The last run went to mpirun (multi-worker, or parameter server as
  // processes) rather than the in-process engine.
  bool acrossProcesses() const;
  // Where step timeline spans go (the Timeline tab); cleared at each start.
  void setTimeline(TimelinePanel* timeline);
  EngineBridge* bridge() const { return bridge_; }
  ProcessBridge* processBridge() const { return process_; }
  QString lastRunDir() const { return run_dir_; }
  // The mpirun command line of the last start across processes (shown in the log).
  QStringList lastCommand() const { return command_; }

signals:
  void runningChanged(bool running);
  void pausedChanged(bool paused);
  void finished(const strata::FinishedEvent& event);
  void prepareFailed(const QString& message);

private:
  void onEvents(const std::vector<Event>& batch);
  void launch(const RunConfig& config, const QString& run_dir, const QString& resume_from, const MultiWorkerOptions& workers);
  bool launchProcess(const RunConfig& config, const QString& run_dir, bool resume, const MultiWorkerOptions& workers);

  EngineBridge* bridge_;
  ProcessBridge* process_;
  ChartsPanel* charts_;
  StatusPanel* status_;
  LogPanel* log_;
  TimelinePanel* timeline_ = nullptr;
  QString run_dir_;
  QStringList command_;
  std::unique_ptr<QTemporaryDir> temp_project_;  // an unsaved project's file for the ranks
  RunBridge* active_ = nullptr;                  // the bridge of the last run: bridge_ or process_
};

}  // namespace strata::ui
