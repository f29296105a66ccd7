#pragma once
#include <QObject>
#include <QString>
#include <vector>

#include "trace/Span.h"
#include "train/Events.h"

namespace strata::ui {

// What the dashboard needs of a running training run, wherever it runs: in
// this process (EngineBridge) or in child processes under mpirun
// (ProcessBridge). Both deliver the run's events in the same ~30 Hz
// batches, so RunController and the panels cannot tell them apart.
class RunBridge : public QObject {
  Q_OBJECT
public:
  using QObject::QObject;
  ~RunBridge() override = default;

  // Finishes the current step, then the run reports "stopped".
  virtual void stop() = 0;
  virtual bool running() const = 0;
  // Holding a run between steps; only a run in this process can.
  virtual bool canPause() const { return false; }
  virtual void pause() {}
  virtual void resume() {}
  virtual bool paused() const { return false; }
  // Delivery interval (the default gives ~30 deliveries a second).
  virtual void setInterval(int ms) = 0;

signals:
  // Events in the order the run emitted them.
  void events(const std::vector<strata::Event>& batch);
  // The run ended before it started (a bad project or launch).
  void prepareFailed(const QString& message);
  void runningChanged(bool running);
  void pausedChanged(bool paused);
  // Text the run printed beside its events (other ranks, mpirun).
  void logLine(const QString& level, const QString& text);
  // Step timeline spans, in the same batches as the events (runs in this
  // process with tracing on; child processes write trace files instead).
  void spans(const std::vector<strata::trace::Span>& batch);
};

}  // namespace strata::ui
