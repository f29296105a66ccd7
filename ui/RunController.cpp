#include "RunController.h"

#include <algorithm>

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>

#include "ChartsPanel.h"
#include "CheckpointEvaluation.h"
#include "EngineBridge.h"
#include "LogPanel.h"
#include "ProcessBridge.h"
#include "RunHistory.h"
#include "StatusPanel.h"
#include "TimelinePanel.h"
#include "project/ProjectFile.h"
#include "project/RunDirectory.h"
#include "train/DataSource.h"

namespace strata::ui {

namespace {
// The ranks read the project from a file in another folder: make dataset
// paths absolute, or they would resolve against that folder.
RunConfig with_absolute_paths(RunConfig c) {
  for (std::string* p : c.dataset.paths())
    if (!p->empty()) *p = resolve_path(*p, c.base_dir);
  return c;
}
}  // namespace

RunController::RunController(ChartsPanel* charts, StatusPanel* status, LogPanel* log, QObject* parent)
    : QObject(parent), bridge_(new EngineBridge(this)), process_(new ProcessBridge(this)), charts_(charts), status_(status), log_(log) {
  for (RunBridge* b : {static_cast<RunBridge*>(bridge_), static_cast<RunBridge*>(process_)}) {
    connect(b, &RunBridge::events, this, &RunController::onEvents);
    connect(b, &RunBridge::runningChanged, this, &RunController::runningChanged);
    connect(b, &RunBridge::logLine, this, [this](const QString& level, const QString& text) { log_->addLine(level, text); });
    connect(b, &RunBridge::pausedChanged, this, [this](bool paused) {
      status_->setPaused(paused);
      Q_EMIT pausedChanged(paused);
    });
    connect(b, &RunBridge::prepareFailed, this, [this](const QString& message) {
      status_->reset();
      log_->addLine("error", message);
      Q_EMIT prepareFailed(message);
    });
  }
}

RunController::~RunController() = default;

void RunController::setTimeline(TimelinePanel* timeline) {
  timeline_ = timeline;
  for (RunBridge* b : {static_cast<RunBridge*>(bridge_), static_cast<RunBridge*>(process_)})
    connect(b, &RunBridge::spans, timeline, &TimelinePanel::addSpans);
}

void RunController::start(const RunConfig& config, const QString& project_path, const MultiWorkerOptions& workers) {
  if (running()) return;
  charts_->setPrelude({});
  const QString dir = project_path.isEmpty() ? QString() : QString::fromStdString(RunDirectory::default_for(project_path.toStdString()));
  launch(config, dir, {}, workers);
}

void RunController::resumeRun(const RunConfig& config, const QString& run_dir, const MultiWorkerOptions& workers) {
  if (running()) return;
  std::string checkpoint;
  try {
    checkpoint = CheckpointManager::resolve(run_dir.toStdString());
  } catch (const std::exception& e) {
    Q_EMIT prepareFailed(QString::fromStdString(e.what()));
    return;
  }
  // The charts start with the run as it was up to the checkpoint; steps
  // after it (done but not checkpointed) are trained again.
  const CheckpointInfo info = CheckpointManager::read_info(checkpoint);
  charts_->setPrelude(events_until(run_dir.toStdString(), info.position.step));
  log_->addLine("info", tr("resuming %1 from %2 (step %3)").arg(run_dir, QString::fromStdString(checkpoint)).arg(info.position.step));
  launch(config, run_dir, QString::fromStdString(checkpoint), workers);
}

void RunController::launch(const RunConfig& config_in, const QString& run_dir, const QString& resume_from,
                           const MultiWorkerOptions& workers) {
  run_dir_ = run_dir;
  if (timeline_) timeline_->clear();
  RunConfig config = config_in;
  const bool as_processes = launches_with_mpirun(config.strategy, workers);
  // Child processes are told where; in this process the run session puts
  // the timeline in the run folder (docs/timeline.md).
  if (as_processes && config.trace.enabled && !run_dir.isEmpty())
    config.trace.file = QDir(run_dir).filePath("trace.json").toStdString();
  active_ = as_processes ? static_cast<RunBridge*>(process_) : bridge_;
  status_->reset();
  log_->addLine("info", tr("starting %1 (%2)").arg(QString::fromStdString(config.name), QString::fromStdString(config.strategy.name)));
  log_->addLine("info", run_dir_.isEmpty() ? tr("unsaved project: this run is not stored (save the project to keep runs)")
                                           : tr("run folder: %1").arg(run_dir_));
  if (as_processes) {
    launchProcess(config, run_dir_, !resume_from.isEmpty(), workers);
    return;
  }
  bridge_->start(config, run_dir_.toStdString(), resume_from.toStdString());
}

bool RunController::launchProcess(const RunConfig& config, const QString& run_dir, bool resume, const MultiWorkerOptions& workers) {
  // The ranks read the configuration as shown, saved or not, so it goes to a
  // file of its own (atomically, by the engine); the user's project file is
  // never touched. With a run folder it is kept there, beside config.json.
  QString project;
  try {
    if (run_dir.isEmpty()) {
      temp_project_ = std::make_unique<QTemporaryDir>();
      project = temp_project_->filePath("project.strata");
    } else {
      QDir().mkpath(run_dir);
      project = QDir(run_dir).filePath(resume ? "project-resume.strata" : "project.strata");
    }
    save_project(with_absolute_paths(config), project.toStdString());
  } catch (const std::exception& e) {
    Q_EMIT prepareFailed(QString::fromStdString(e.what()));
    return false;
  }
  const QString mpirun = find_mpirun(), strata_run = find_strata_run();
  if (mpirun.isEmpty() || strata_run.isEmpty()) {
    Q_EMIT prepareFailed(config.strategy.name == "parameter_server" ? parameter_server_processes_unavailable_reason()
                                                                    : multi_worker_unavailable_reason());
    return false;
  }
  if (const QString problem = launch_options_problem(workers); !problem.isEmpty()) {
    Q_EMIT prepareFailed(problem);
    return false;
  }
  command_ = mpirun_arguments(workers, strata_run, project, config.strategy, run_dir, resume);
  // Each rank writes its own timeline (trace.rankN.json); strata-run
  // --merge-traces puts them on one clock.
  if (!config.trace.file.empty())
    command_ << "--trace" << QString::fromStdString(config.trace.file) << "--device-lanes"
             << trace::device_lanes_name(config.trace.device_lanes) << "--trace-max-mib"
             << QString::number(config.trace.max_file_mib);
  log_->addLine("info", tr("launching: mpirun %1").arg(command_.join(' ')));
  process_->start(mpirun, command_);
  return true;
}

void RunController::pause() {
  if (active_) active_->pause();
}
void RunController::resume() {
  if (active_) active_->resume();
}
void RunController::stop() {
  if (!running()) return;
  log_->addLine("info", acrossProcesses() ? tr("stop requested: every rank finishes the current step and checkpoints")
                                          : tr("stop requested: finishing the current step"));
  active_->stop();
}
bool RunController::running() const { return active_ && active_->running(); }
bool RunController::paused() const { return active_ && active_->paused(); }
bool RunController::canPause() const { return active_ && active_->canPause(); }
bool RunController::acrossProcesses() const { return active_ == process_; }

void RunController::onEvents(const std::vector<Event>& batch) {
  QElapsedTimer cost;
  cost.start();
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
      log_->addLine(f->status == RunStatus::Failed ? "error" : "info",
                    tr("finished: %1 (%2)").arg(status_name(f->status), QString::fromStdString(f->message)), f->time);
      Q_EMIT finished(*f);
    }
  }
  if (last_step) status_->onStep(*last_step);
  // The UI thread shares the cores with training (in this process or in the
  // ranks beside it): the next delivery waits 66 times what this one cost
  // (event handling + the replots, whose previous times stand in for these
  // queued ones), keeping the refresh near 1.5% of one core - at most 30 Hz
  // while the charts are small, down to 2 Hz when they hold millions of
  // points. At 33 times (3% of a core) a fast run whose threads filled both
  // cores of a 2-core machine lost about 3% of its throughput
  // (strata_ui_bench, 2026-12-07; docs/dashboard.md).
  const double ms = static_cast<double>(cost.nsecsElapsed()) / 1e6 + charts_->lastReplotMs();
  const int interval = std::clamp(static_cast<int>(ms * 66.0), 33, 500);
  bridge_->setInterval(interval);
  process_->setInterval(interval);
}

}  // namespace strata::ui
