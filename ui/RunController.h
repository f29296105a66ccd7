#pragma once
#include <QObject>
#include <QString>
#include <vector>

#include "train/Events.h"
#include "train/RunConfig.h"

namespace strata::ui {

class ChartsPanel;
class EngineBridge;
class LogPanel;
class StatusPanel;

// Connects one training run to the panels that show it: starts the engine
// bridge (with a run folder beside the project when it has a file), routes
// each delivered batch of events to the charts, status and log, and
// reports the end.
class RunController : public QObject {
  Q_OBJECT
public:
  RunController(ChartsPanel* charts, StatusPanel* status, LogPanel* log, QObject* parent = nullptr);
  // project_path empty: an unsaved project, so the run is not stored.
  void start(const RunConfig& config, const QString& project_path);
  void pause();
  void resume();
  void stop();
  bool running() const;
  bool paused() const;
  EngineBridge* bridge() const { return bridge_; }
  QString lastRunDir() const { return run_dir_; }

signals:
  void runningChanged(bool running);
  void pausedChanged(bool paused);
  void finished(const strata::FinishedEvent& event);
  void prepareFailed(const QString& message);

private:
  void onEvents(const std::vector<Event>& batch);

  EngineBridge* bridge_;
  ChartsPanel* charts_;
  StatusPanel* status_;
  LogPanel* log_;
  QString run_dir_;
};

}  // namespace strata::ui
