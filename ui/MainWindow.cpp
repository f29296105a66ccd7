#include "MainWindow.h"

#include <algorithm>

#include <QApplication>
#include <QCloseEvent>
#include <QDesktopServices>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QUrl>

#include "AppPaths.h"
#include "ChartsPanel.h"
#include "CheckpointEvaluation.h"
#include "ConfigEditor.h"
#include "EvaluationView.h"
#include "LogPanel.h"
#include "MessagePresenter.h"
#include "RecentFiles.h"
#include "RunController.h"
#include "RunHistory.h"
#include "RunHistoryPanel.h"
#include "StatusPanel.h"
#include "StrategyPanel.h"
#include "TimelinePanel.h"
#include "TraceLoader.h"
#include "Wording.h"
#include "project/ProjectFile.h"
#include "project/RunNotes.h"
#include "trace/ChromeTraceReader.h"

// Resources of a static library must be registered by name, outside any
// namespace, before first use.
static void initStrataResources() { Q_INIT_RESOURCE(strata); }

namespace strata::ui {

namespace {
// What File > New starts from: the Fashion-MNIST MLP of the tutorials.
RunConfig blank_project() {
  RunConfig c;
  c.name = "untitled";
  c.layers = {{{"type", "flatten"}},
              {{"type", "dense"}, {"units", 128}, {"activation", "relu"}},
              {{"type", "dense"}, {"units", 10}, {"activation", "linear"}}};
  c.training.epochs = 5;
  c.strategy.devices = {"cpu:0"};
  return c;
}
const QString kFilter = QObject::tr("Strata projects (*.strata);;All files (*)");
}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      presenter_(std::make_unique<DialogPresenter>()),
      editor_(new ConfigEditor),
      charts_(new ChartsPanel),
      status_(new StatusPanel),
      log_(new LogPanel),
      history_(new RunHistoryPanel),
      bottom_tabs_(new QTabWidget),
      timeline_(new TimelinePanel),
      trace_loader_(new TraceLoader(this)),
      run_(new RunController(charts_, status_, log_, this)),
      evaluation_(new EvaluationView(this)),
      recent_(new RecentFiles(this)) {
  initStrataResources();
  // Its own window: the sample grid and the matrix need more room than the
  // panels below the charts have.
  evaluation_->setWindowFlag(Qt::Window);
  evaluation_->setPresenter(presenter_.get());
  setWindowIcon(QIcon(":/strata/strata.png"));
  auto* right = new QSplitter(Qt::Vertical);
  right->addWidget(charts_);
  auto* lower = new QSplitter(Qt::Horizontal);
  lower->addWidget(status_);
  bottom_tabs_->addTab(log_, tr("Log"));
  bottom_tabs_->addTab(history_, tr("Runs"));
  bottom_tabs_->addTab(timeline_, tr("Timeline"));
  run_->setTimeline(timeline_);
  lower->addWidget(bottom_tabs_);
  lower->setStretchFactor(0, 1);
  lower->setStretchFactor(1, 1);
  right->addWidget(lower);
  right->setStretchFactor(0, 4);
  right->setStretchFactor(1, 1);
  auto* main = new QSplitter(Qt::Horizontal);
  main->addWidget(editor_);
  main->addWidget(right);
  main->setStretchFactor(0, 0);
  main->setStretchFactor(1, 1);
  editor_->setMinimumWidth(380);
  setCentralWidget(main);
  buildActions();
  resize(1440, 900);

  connect(editor_, &ConfigEditor::edited, this, [this] {
    name_ = QString::fromStdString(editor_->config().name);  // the title follows the name field
    setModified(true);
  });
  connect(run_, &RunController::runningChanged, this, [this](bool running) {
    editor_->setLocked(running);
    history_->setRunning(running);
    updateRunActions();
  });
  connect(run_, &RunController::pausedChanged, this, &MainWindow::updateRunActions);
  connect(run_, &RunController::finished, this, &MainWindow::onFinished);
  connect(run_, &RunController::prepareFailed, this, [this](const QString& message) {
    presenter_->error(this, tr("Cannot start the run"), message);
  });
  connect(history_, &RunHistoryPanel::overlayToggled, this, &MainWindow::onOverlay);
  connect(history_, &RunHistoryPanel::resumeRequested, this, &MainWindow::resumeStoredRun);
  connect(history_, &RunHistoryPanel::evaluateRequested, this, &MainWindow::evaluateRun);
  connect(timeline_, &TimelinePanel::openTraceRequested, this, &MainWindow::chooseAndOpenTrace);
  connect(history_, &RunHistoryPanel::timelineRequested, this, &MainWindow::openTrace);
  connect(trace_loader_, &TraceLoader::loaded, this,
          [this](const QString&, const std::shared_ptr<const trace::TraceContents>& contents) {
            timeline_->showReading({});
            timeline_->showTrace(*contents);
          });
  connect(trace_loader_, &TraceLoader::failed, this, [this](const QString&, const QString& message) {
    timeline_->showReading({});
    presenter_->error(this, tr("Cannot open trace"), message);
  });
  connect(history_, &RunHistoryPanel::problem, this,
          [this](const QString& title, const QString& message) { presenter_->error(this, title, message); });
  connect(recent_, &RecentFiles::openRequested, this, &MainWindow::openProject);
  setDocument(blank_project(), {});
}

MainWindow::~MainWindow() = default;

void MainWindow::setPresenter(std::unique_ptr<MessagePresenter> presenter) {
  presenter_ = std::move(presenter);
  evaluation_->setPresenter(presenter_.get());
}

void MainWindow::buildActions() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  new_ = file->addAction(tr("&New"), QKeySequence::New, this, [this] { newProject(); });
  open_ = file->addAction(tr("&Open…"), QKeySequence::Open, this, &MainWindow::chooseAndOpen);
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  connect(recent_menu_, &QMenu::aboutToShow, this, [this] { recent_->fillMenu(recent_menu_); });
  save_ = file->addAction(tr("&Save"), QKeySequence::Save, this, [this] { saveProject(); });
  save_as_ = file->addAction(tr("Save &As…"), QKeySequence::SaveAs, this, [this] { chooseAndSave(); });
  file->addSeparator();
  file->addAction(tr("Open &Trace…"), this, &MainWindow::chooseAndOpenTrace)->setObjectName("openTraceAction");
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  start_ = run->addAction(tr("&Start"), QKeySequence(Qt::CTRL | Qt::Key_R), this, &MainWindow::startRun);
  pause_ = run->addAction(tr("&Pause"), this, [this] { run_->paused() ? resumeRun() : pauseRun(); });
  stop_ = run->addAction(tr("S&top"), this, &MainWindow::stopRun);
  stop_->setToolTip(tr("Stop after the current step"));
  for (QAction* a : {start_, pause_, stop_}) a->setObjectName(a->text().remove('&').toLower() + "Action");

  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("Reset chart views"), charts_, &ChartsPanel::resetViews);
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  // The guide that ships with the program (docs/dashboard.md), opened in
  // the desktop's viewer for Markdown files.
  const QString guide = findDashboardGuide();
  QAction* docs = help->addAction(tr("&Documentation"), QKeySequence::HelpContents, this, [this, guide] {
    if (guide.isEmpty() || !QDesktopServices::openUrl(QUrl::fromLocalFile(guide)))
      presenter_->error(this, tr("Documentation"),
                        guide.isEmpty() ? tr("The guides are not installed (share/doc/strata/docs).")
                                        : tr("No program here opens %1.").arg(guide));
  });
  docs->setObjectName("documentationAction");
  docs->setStatusTip(guide.isEmpty() ? tr("The guides are not installed") : guide);
  help->addAction(tr("&About Strata"), this, [this] {
    QMessageBox::about(this, tr("About Strata"),
                       tr("<b>Strata %1</b><br>Distributed neural-network training with TensorFlow-style "
                          "distribution strategies.").arg(QApplication::applicationVersion()));
  });

  QToolBar* bar = addToolBar(tr("Main"));
  bar->setObjectName("mainToolBar");
  bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  for (QAction* a : {new_, open_, save_}) bar->addAction(a);
  bar->addSeparator();
  for (QAction* a : {start_, pause_, stop_}) bar->addAction(a);
  updateRunActions();
}

void MainWindow::updateRunActions() {
  const bool running = run_->running();
  start_->setEnabled(!running);
  pause_->setEnabled(run_->canPause());
  pause_->setText(run_->paused() ? tr("&Resume") : tr("&Pause"));
  pause_->setToolTip(running && !run_->canPause()
                         ? tr("A run across processes (multi-worker, or parameter servers with mpirun) cannot pause: "
                              "its ranks run in other processes and would time out waiting for each other; Stop "
                              "checkpoints it, and Resume in the run history continues it")
                         : tr("Pause after the current step"));
  stop_->setEnabled(running);
  // A different project cannot be loaded under a running trainer.
  for (QAction* a : {new_, open_}) a->setEnabled(!running);
  recent_menu_->setEnabled(!running);
  statusBar()->showMessage(running ? (run_->paused() ? tr("Paused") : tr("Training…")) : tr("Ready"));
}

RunConfig MainWindow::currentConfig() const { return editor_->config(); }

void MainWindow::setDocument(const RunConfig& config, const QString& path) {
  path_ = path;
  name_ = QString::fromStdString(config.name);
  // Another project: nothing of the previous one's charts, ranges or log stays.
  charts_->clearAll();
  overlay_labels_.clear();
  log_->clear();
  status_->reset();
  editor_->setConfig(config);
  history_->setProject(path);
  setModified(false);
}

void MainWindow::setModified(bool modified) {
  modified_ = modified;
  updateTitle();
}

void MainWindow::updateTitle() {
  const QString file = path_.isEmpty() ? tr("not saved") : QFileInfo(path_).fileName();
  setWindowTitle(QStringLiteral("%1 (%2)%3 — Strata").arg(name_, file, modified_ ? "*" : ""));
}

bool MainWindow::maybeSave() {
  if (!modified_) return true;
  switch (presenter_->askSaveChanges(this, name_)) {
    case MessagePresenter::Choice::Save:
      return saveProject();
    case MessagePresenter::Choice::Discard:
      return true;
    case MessagePresenter::Choice::Cancel:
      break;
  }
  return false;
}

bool MainWindow::newProject() {
  if (run_->running() || !maybeSave()) return false;
  setDocument(blank_project(), {});
  return true;
}

bool MainWindow::openProject(const QString& path) {
  if (run_->running()) return false;
  // The file is read first: one that cannot be opened costs the user no
  // "save changes?" question, and the project in the window stays.
  RunConfig config;
  try {
    config = load_project(path.toStdString());
  } catch (const std::exception& e) {
    // The window keeps the project it had; the file is not touched.
    presenter_->error(this, tr("Cannot open project"), QString::fromStdString(e.what()));
    return false;
  }
  if (!maybeSave()) return false;
  setDocument(config, QFileInfo(path).absoluteFilePath());
  recent_->add(path);
  // The charts show the project's last run again, as an overlay.
  if (const int newest = history_->newestRow(); newest >= 0) history_->setOverlay(newest, true);
  return true;
}

bool MainWindow::openTemplate(const QString& path) {
  if (!openProject(path)) return false;
  path_.clear();
  history_->setProject({});
  updateTitle();
  return true;
}

bool MainWindow::saveProject() {
  if (path_.isEmpty()) return chooseAndSave();
  return saveProjectAs(path_);
}

bool MainWindow::saveProjectAs(const QString& path) {
  RunConfig config = editor_->config();
  try {
    save_project(config, path.toStdString());  // atomic: the old file survives any failure
  } catch (const std::exception& e) {
    presenter_->error(this, tr("Cannot save project"), QString::fromStdString(e.what()));
    return false;
  }
  const QString abs = QFileInfo(path).absoluteFilePath();
  if (abs != path_) {
    path_ = abs;
    history_->setProject(path_);
  }
  recent_->add(path_);
  setModified(false);
  return true;
}

void MainWindow::chooseAndOpen() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open project"), QFileInfo(path_).absolutePath(), kFilter);
  if (!path.isEmpty()) openProject(path);
}

bool MainWindow::chooseAndSave() {
  QString path = QFileDialog::getSaveFileName(this, tr("Save project"), path_.isEmpty() ? name_ + ".strata" : path_, kFilter);
  if (path.isEmpty()) return false;
  if (QFileInfo(path).suffix().isEmpty()) path += ".strata";
  return saveProjectAs(path);
}

void MainWindow::chooseAndOpenTrace() {
  // Where traces are: the last run's folder, else the project's runs.
  QString dir = run_->lastRunDir();
  if (dir.isEmpty() && !path_.isEmpty()) dir = QFileInfo(path_).absolutePath();
  const QString path = presenter_->openFileName(this, tr("Open trace"), dir, tr("Strata traces (*.json);;All files (*)"));
  if (!path.isEmpty()) openTrace(path);
}

void MainWindow::openTrace(const QString& path) {
  timeline_->showReading(path);
  bottom_tabs_->setCurrentWidget(timeline_);
  trace_loader_->load(path);
}

bool MainWindow::readingTrace() const { return trace_loader_->busy(); }

void MainWindow::startRun() {
  if (run_->running()) return;
  bottom_tabs_->setCurrentWidget(log_);
  run_->start(editor_->config(), path_, editor_->strategyPanel()->multiWorkerOptions());
}

void MainWindow::resumeStoredRun(const QString& run_dir) {
  if (run_->running()) return;
  RunConfig config;
  try {
    // The run's own configuration, as it was started, not the editor's:
    // the checkpoint only fits the model it was written for.
    config = run_config(run_dir.toStdString(), QFileInfo(path_).absolutePath().toStdString());
  } catch (const std::exception& e) {
    presenter_->error(this, tr("Cannot resume the run"), QString::fromStdString(e.what()));
    return;
  }
  bottom_tabs_->setCurrentWidget(log_);
  run_->resumeRun(config, run_dir, editor_->strategyPanel()->multiWorkerOptions());
}

void MainWindow::evaluateRun(const QString& run_dir) {
  RunConfig config;
  try {
    config = run_config(run_dir.toStdString(), QFileInfo(path_).absolutePath().toStdString());
  } catch (const std::exception& e) {
    presenter_->error(this, tr("Cannot evaluate the run"), QString::fromStdString(e.what()));
    return;
  }
  evaluation_->show();
  evaluation_->raise();
  evaluation_->setRun(config, run_dir);
}

void MainWindow::pauseRun() { run_->pause(); }
void MainWindow::resumeRun() { run_->resume(); }
void MainWindow::stopRun() { run_->stop(); }

void MainWindow::onFinished(const FinishedEvent& event) {
  history_->refresh();
  if (event.status != RunStatus::Failed) return;
  QString title = tr("Training failed");
  if (event.failure == FailureKind::Diverged) title = tr("Training diverged");
  if (event.failure == FailureKind::OutOfDeviceMemory) title = tr("Out of device memory");
  presenter_->error(this, title, QString::fromStdString(event.message));
}

void MainWindow::onOverlay(const QString& run_dir, bool on) {
  if (!on) {
    charts_->removeOverlay(overlay_labels_.take(run_dir));
    return;
  }
  QString label = QFileInfo(run_dir).fileName();
  try {
    if (const RunNotes n = read_run_notes(run_dir.toStdString()); !n.name.empty()) label = QString::fromStdString(n.name);
  } catch (const std::exception&) {
    // An unreadable run.json was reported when the history was listed.
  }
  // Two runs of the same name stay apart in the legends.
  if (std::find(overlay_labels_.cbegin(), overlay_labels_.cend(), label) != overlay_labels_.cend())
    label += " (" + QFileInfo(run_dir).fileName() + ")";
  overlay_labels_[run_dir] = label;
  int bad = 0;
  RunSeries run = load_run(run_dir.toStdString(), &bad);
  if (bad > 0)
    log_->addLine(
        "warning",
        tr("%1: skipped %2 in events.jsonl").arg(run_dir, counted(bad, tr("unreadable line"), tr("unreadable lines"))));
  charts_->addOverlay(run, label);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!maybeSave()) {
    event->ignore();
    return;
  }
  // The bridge stops the trainer after its current step and joins it.
  run_->stop();
  event->accept();
}

}  // namespace strata::ui
