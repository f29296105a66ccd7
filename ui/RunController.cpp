#include "RunController.h"

#include "ChartsPanel.h"
#include "EngineBridge.h"
#include "LogPanel.h"
#include "StatusPanel.h"
#include "project/RunDirectory.h"

namespace strata::ui {

RunController::RunController(ChartsPanel* charts, StatusPanel* status, LogPanel* log, QObject* parent)
    : QObject(parent), bridge_(new EngineBridge(this)), charts_(charts), status_(status), log_(log) {
  connect(bridge_, &EngineBridge::events, this, &RunController::onEvents);
  connect(bridge_, &EngineBridge::runningChanged, this, &RunController::runningChanged);
  connect(bridge_, &EngineBridge::pausedChanged, this, [this](bool paused) {
    status_->setPaused(paused);
    Q_EMIT pausedChanged(paused);
  });
  connect(bridge_, &EngineBridge::prepareFailed, this, [this](const QString& message) {
    status_->reset();
    log_->addLine("error", message);
    Q_EMIT prepareFailed(message);
  });
}

void RunController::start(const RunConfig& config, const QString& project_path) {
  if (running()) return;
  run_dir_ = project_path.isEmpty() ? QString() : QString::fromStdString(RunDirectory::default_for(project_path.toStdString()));
  status_->reset();
  log_->addLine("info", tr("starting %1 (%2)").arg(QString::fromStdString(config.name), QString::fromStdString(config.strategy.name)));
  log_->addLine("info", run_dir_.isEmpty() ? tr("unsaved project: this run is not stored (save the project to keep runs)")
                                           : tr("run folder: %1").arg(run_dir_));
  bridge_->start(config, run_dir_.toStdString());
}

void RunController::pause() { bridge_->pause(); }
void RunController::resume() { bridge_->resume(); }
void RunController::stop() {
  if (!running()) return;
  log_->addLine("info", tr("stop requested: finishing the current step"));
  bridge_->stop();
}
bool RunController::running() const { return bridge_->running(); }
bool RunController::paused() const { return bridge_->paused(); }

void RunController::onEvents(const std::vector<Event>& batch) {
  // Charts take the whole batch and replot once; the status panel only
  // needs the newest step, so a burst of steps costs one label update.
  charts_->addEvents(batch);
  const StepEvent* last_step = nullptr;
  for (const auto& ev : batch) {
    if (auto* r = std::get_if<RunStartedEvent>(&ev)) {
      status_->onStarted(*r);
    } else if (auto* s = std::get_if<StepEvent>(&ev)) {
      last_step = s;
    } else if (auto* e = std::get_if<EpochEvent>(&ev)) {
      if (last_step) status_->onStep(*last_step);
      last_step = nullptr;
      QString line = tr("epoch %1: loss %2, accuracy %3").arg(e->epoch).arg(e->loss, 0, 'g', 5).arg(e->accuracy, 0, 'f', 4);
      if (e->val_loss) line += tr(", validation loss %1").arg(*e->val_loss, 0, 'g', 5);
      if (e->val_accuracy) line += tr(", validation accuracy %1").arg(*e->val_accuracy, 0, 'f', 4);
      line += tr(", %1 samples/s").arg(e->samples_per_sec, 0, 'f', 0);
      log_->addLine("info", line, e->time);
    } else if (auto* d = std::get_if<DeviceStatsEvent>(&ev)) {
      status_->onDeviceStats(*d);
    } else if (auto* l = std::get_if<LogEvent>(&ev)) {
      log_->addLine(QString::fromStdString(l->level), QString::fromStdString(l->message), l->time);
    } else if (auto* c = std::get_if<CheckpointEvent>(&ev)) {
      log_->addLine("info", tr("checkpoint %1").arg(QString::fromStdString(c->path)), c->time);
    } else if (auto* f = std::get_if<FinishedEvent>(&ev)) {
      if (last_step) status_->onStep(*last_step);
      last_step = nullptr;
      status_->onFinished(*f);
      log_->addLine(f->status == "failed" ? "error" : "info",
                    tr("finished: %1 (%2)").arg(QString::fromStdString(f->status), QString::fromStdString(f->message)), f->time);
      Q_EMIT finished(*f);
    }
  }
  if (last_step) status_->onStep(*last_step);
}

}  // namespace strata::ui
