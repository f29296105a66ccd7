// Drives the dashboard the way a user would: configure a Mirrored run on two
// CPU replicas through the panels, train, pause/resume/stop, save and reopen,
// broken files, divergence, run history overlays, and a mid-run screenshot.
#include <QComboBox>
#include <QDir>
#include <QLineEdit>
#include <QFile>
#include <QListWidget>
#include <QRadioButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTest>
#include <cmath>

#include "ChartsPanel.h"
#include "ConfigEditor.h"
#include "DatasetPanel.h"
#include "DevicesPanel.h"
#include "EngineBridge.h"
#include "EvaluationView.h"
#include "MultiWorkerLaunch.h"
#include "MultiWorkerPanel.h"
#include "LogPanel.h"
#include "MainWindow.h"
#include "MessagePresenter.h"
#include "ModelPanel.h"
#include "RunController.h"
#include "RunHistoryPanel.h"
#include "StatusPanel.h"
#include "StrategyPanel.h"
#include "TrainingPanel.h"
#include "distribute/Cluster.h"
#include "train/SafeTensors.h"

using namespace strata;
using namespace strata::ui;

namespace {
// Answers questions without a modal dialog and remembers what was shown.
struct RecordingPresenter final : MessagePresenter {
  QStringList titles, errors;
  Choice answer = Choice::Discard;
  int asked = 0;
  void error(QWidget*, const QString& title, const QString& message) override {
    titles << title;
    errors << message;
  }
  Choice askSaveChanges(QWidget*, const QString&) override {
    ++asked;
    return answer;
  }
  QString save_path;  // what the "file dialog" answers
  QString saveFileName(QWidget*, const QString&, const QString&, const QString&) override { return save_path; }
};

struct Window {
  MainWindow w;
  RecordingPresenter* presenter;
  Window() {
    auto p = std::make_unique<RecordingPresenter>();
    presenter = p.get();
    w.setPresenter(std::move(p));
  }
  ConfigEditor* editor() { return w.configEditor(); }
};

void check_device(QListWidget* list, const QString& device, bool on) {
  for (int i = 0; i < list->count(); ++i)
    if (list->item(i)->data(Qt::UserRole).toString() == device) list->item(i)->setCheckState(on ? Qt::Checked : Qt::Unchecked);
}
}  // namespace

class DashboardTest : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void initTestCase();
  void unavailableStrategiesAreDisabled();
  void modelEditorChecksShapes();
  void mirroredRunFillsCharts();
  void runHistoryOverlays();
  void pauseResumeStop();
  void saveAndReopen();
  void askBeforeDiscarding();
  void invalidFileShowsDialog();
  void badDatasetShowsDialog();
  void divergenceIsMarked();
  void resumeStoppedRun();
  void evaluationViewAndExport();
  void multiWorkerRun();
  void multiWorkerStop();
  void screenshotMidRun();

private:
  // Opens the tiny synthetic project and turns it into a 2-replica Mirrored
  // run through the panels' own widgets.
  void configureMirrored(Window& win, int epochs);
  // A copy of the tiny project under another name (its own run history).
  QString copyProject(const QString& name);
  // MultiWorkerMirrored, 2 processes of one cpu:0 replica each.
  void configureMultiWorker(Window& win, const QString& project, int epochs);
  QString resumed_run_;
  QTemporaryDir tmp_;
  QString project_;
};

void DashboardTest::initTestCase() {
  QCoreApplication::setOrganizationName("StrataTest");  // keep the user's recent files alone
  QVERIFY(tmp_.isValid());
  project_ = tmp_.filePath("tiny.strata");
  QVERIFY(QFile::copy(STRATA_SOURCE_DIR "/resources/examples/tiny-synthetic.strata", project_));
  QFile::setPermissions(project_, QFile::ReadOwner | QFile::WriteOwner);
}

void DashboardTest::configureMirrored(Window& win, int epochs) {
  QVERIFY(win.w.openProject(project_));
  QVERIFY(!win.w.isModified());
  auto* mirrored = win.w.findChild<QRadioButton*>("strategy_mirrored");
  QVERIFY(mirrored && mirrored->isEnabled());
  QTest::mouseClick(mirrored, Qt::LeftButton, Qt::NoModifier, QPoint(8, mirrored->height() / 2));
  QVERIFY(mirrored->isChecked());
  auto* devices = win.w.findChild<QListWidget*>("deviceList");
  check_device(devices, "cpu:0", true);
  check_device(devices, "cpu:1", true);
  QCOMPARE(win.editor()->devicesPanel()->selectedDevices(), QStringList({"cpu:0", "cpu:1"}));
  win.editor()->trainingPanel()->epochsBox()->setValue(epochs);
  win.editor()->trainingPanel()->batchBox()->setValue(50);
  QVERIFY2(win.editor()->devicesPanel()->summary().contains("25 + 25"), qPrintable(win.editor()->devicesPanel()->summary()));
  QVERIFY(win.w.isModified());
  QVERIFY(win.w.windowTitle().contains("*"));
  const RunConfig c = win.w.currentConfig();
  QCOMPARE(QString::fromStdString(c.strategy.name), QString("mirrored"));
  QCOMPARE(c.training.epochs, epochs);
}

void DashboardTest::unavailableStrategiesAreDisabled() {
  Window win;
  auto* ps = win.w.findChild<QRadioButton*>("strategy_parameter_server");
  QVERIFY(ps && !ps->isEnabled());
  QVERIFY2(ps->toolTip().contains("Not available"), qPrintable(ps->toolTip()));
  // Multi-worker runs are launched with mpirun: available exactly when the
  // engine has MPI and mpirun is on PATH, else the tooltip says what lacks.
  auto* mw = win.w.findChild<QRadioButton*>("strategy_multi_worker_mirrored");
  QVERIFY(mw);
  const bool can = mpi_built() && !find_mpirun().isEmpty() && !find_strata_run().isEmpty();
  QCOMPARE(mw->isEnabled(), can);
  if (!can) QVERIFY2(mw->toolTip().contains("mpirun") && mw->toolTip().contains("Not available"), qPrintable(mw->toolTip()));
  for (const char* name : {"one_device", "mirrored", "central_storage"})
    QVERIFY(win.w.findChild<QRadioButton*>(QString("strategy_") + name)->isEnabled());
}

void DashboardTest::modelEditorChecksShapes() {
  Window win;
  QVERIFY(win.w.openProject(project_));
  ModelPanel* model = win.editor()->modelPanel();
  // The preview loads on a worker thread and may not have started yet when
  // the project is open: wait for its result, not just for "not busy".
  QTRY_COMPARE_WITH_TIMEOUT(win.editor()->datasetPanel()->previewRows(), qint64(800), 30000);
  QVERIFY2(win.editor()->datasetPanel()->previewError().isEmpty(), qPrintable(win.editor()->datasetPanel()->previewError()));
  QCOMPARE(model->layerCount(), 2);
  QCOMPARE(model->outputShape(0), QString("(32)"));
  QCOMPARE(model->layerParams(0), qint64(16 * 32 + 32));
  QCOMPARE(model->totalParams(), qint64(16 * 32 + 32 + 32 * 4 + 4));
  QVERIFY(model->problems().isEmpty());
  model->setLayerSettings(0, "units=-3, activation=relu");
  QVERIFY2(model->problems().contains("model.layers[0].units: must be a positive integer, got -3"), qPrintable(model->problems()));
  model->setLayerSettings(0, "units=8, activation=tanh");
  QVERIFY(model->problems().isEmpty());
  model->addLayer({{"type", "dropout"}, {"rate", 0.1}}, 1);
  QCOMPARE(model->layerCount(), 3);
  QCOMPARE(model->outputShape(1), QString("(8)"));
  model->moveLayer(1, -1);  // dropout first: still fits
  QCOMPARE(QString::fromStdString(model->layers()[0]["type"].get<std::string>()), QString("dropout"));
  model->setLayerSettings(2, "units=3");  // fewer outputs than classes
  QVERIFY(model->problems().contains("4 classes"));
  model->removeLayer(0);
  QCOMPARE(model->layerCount(), 2);
  QVERIFY(win.w.isModified());
}

void DashboardTest::mirroredRunFillsCharts() {
  Window win;
  configureMirrored(win, 3);
  QVERIFY(win.w.saveProject());  // saved, so the run is stored beside it
  QVERIFY(!win.w.isModified());
  win.w.startRun();
  QVERIFY(win.w.runController()->running());
  QVERIFY(win.editor()->locked());
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 120000);
  QVERIFY(!win.editor()->locked());
  QVERIFY2(win.presenter->errors.isEmpty(), qPrintable(win.presenter->errors.join("\n")));
  QVERIFY2(win.w.statusPanel()->statusText().startsWith("Completed"), qPrintable(win.w.statusPanel()->statusText()));

  // 800 training examples (the synthetic set's 80 %), global batch 50: 16 steps an epoch.
  const int steps = 3 * 16;
  const RunSeries& live = win.w.charts()->liveRun();
  QVERIFY(live.started);
  QCOMPARE(live.started->replicas, 2);
  QCOMPARE(int(live.step.size()), steps);
  ChartView* loss = win.w.charts()->lossChart();
  for (const char* name : {"replica 0", "replica 1", "loss (reduced)"}) {
    const int s = loss->seriesIndex(name);
    QVERIFY2(s >= 0, name);
    QCOMPARE(loss->pointCount(s), steps);
  }
  QCOMPARE(loss->seriesIndex("replica 2"), -1);
  QCOMPARE(win.w.charts()->accuracyChart()->pointCount(win.w.charts()->accuracyChart()->seriesIndex("validation accuracy")), 3);
  QCOMPARE(win.w.charts()->throughputChart()->pointCount(0), steps);
  QCOMPARE(win.w.statusPanel()->progressValue(), steps);
  // The reduced loss is the mean over the global batch: with equal halves,
  // the mean of the replicas' losses.
  QVERIFY(std::abs(live.loss[5] - (live.replica_loss[0][5] + live.replica_loss[1][5]) / 2) < 1e-5);
  // The run folder landed beside the project.
  const QString run_dir = win.w.runController()->lastRunDir();
  QVERIFY(run_dir.startsWith(tmp_.filePath("tiny.runs")));
  QVERIFY(QFile::exists(run_dir + "/events.jsonl"));
  QVERIFY(QFile::exists(run_dir + "/metrics.json"));
  QCOMPARE(win.w.historyPanel()->runCount(), 1);
}

void DashboardTest::runHistoryOverlays() {
  Window win;
  QVERIFY(win.w.openProject(project_));  // reopening lists the earlier run
  QVERIFY(win.w.historyPanel()->runCount() >= 1);
  ChartView* loss = win.w.charts()->lossChart();
  const QString label = QFileInfo(win.w.historyPanel()->runDir(0)).fileName();
  win.w.historyPanel()->setOverlay(0, true);
  const int s = loss->seriesIndex(label + " · loss");
  QVERIFY(s >= 0);
  QCOMPARE(loss->pointCount(s), 48);
  QVERIFY(win.w.charts()->accuracyChart()->seriesIndex(label + " · validation accuracy") >= 0);
  win.w.historyPanel()->setOverlay(0, false);
  QCOMPARE(loss->seriesIndex(label + " · loss"), -1);
}

void DashboardTest::pauseResumeStop() {
  Window win;
  configureMirrored(win, 100000);  // far longer than the test waits
  win.w.startRun();
  const RunSeries& live = win.w.charts()->liveRun();
  QTRY_VERIFY_WITH_TIMEOUT(live.step.size() > 5, 60000);
  win.w.pauseRun();
  QVERIFY(win.w.runController()->paused());
  QCOMPARE(win.w.findChild<QAction*>("pauseAction")->text(), QString("&Resume"));
  QTest::qWait(300);  // the step in flight finishes, then nothing more
  const size_t at_pause = live.step.size();
  QTest::qWait(500);
  QCOMPARE(live.step.size(), at_pause);
  QVERIFY(win.w.runController()->running());
  win.w.resumeRun();
  QVERIFY(!win.w.runController()->paused());
  QTRY_VERIFY_WITH_TIMEOUT(live.step.size() > at_pause + 3, 60000);
  win.w.stopRun();
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 60000);
  QVERIFY2(win.w.statusPanel()->statusText().startsWith("Stopped"), qPrintable(win.w.statusPanel()->statusText()));
  QVERIFY(live.finished && live.finished->status == "stopped");
  QVERIFY(win.presenter->errors.isEmpty());
  QVERIFY(!win.editor()->locked());
  // Stop works from a paused run too.
  win.w.startRun();
  QTRY_VERIFY_WITH_TIMEOUT(live.step.size() > 2, 60000);
  win.w.pauseRun();
  win.w.stopRun();
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 60000);
  QVERIFY(live.finished && live.finished->status == "stopped");
}

void DashboardTest::saveAndReopen() {
  const QString path = tmp_.filePath("saved.strata");
  {
    Window win;
    configureMirrored(win, 7);
    win.editor()->modelPanel()->addLayer({{"type", "dropout"}, {"rate", 0.25}}, 1);
    QVERIFY(win.w.saveProjectAs(path));
    QVERIFY(!win.w.isModified());
    QVERIFY(!win.w.windowTitle().contains("*"));
    QVERIFY(win.w.windowTitle().contains("saved.strata"));
  }
  Window win;
  QVERIFY(win.w.openProject(path));
  const RunConfig c = win.w.currentConfig();
  QCOMPARE(QString::fromStdString(c.strategy.name), QString("mirrored"));
  QCOMPARE(c.strategy.devices, (std::vector<std::string>{"cpu:0", "cpu:1"}));
  QCOMPARE(c.training.epochs, 7);
  QCOMPARE(c.training.batch_size, int64_t(50));
  QCOMPARE(c.layers.size(), size_t(3));
  QCOMPARE(QString::fromStdString(c.layers[1]["type"].get<std::string>()), QString("dropout"));
  QCOMPARE(QString::fromStdString(c.dataset.kind), QString("synthetic"));
  QVERIFY(win.editor()->strategyPanel()->strategy() == "mirrored");
}

void DashboardTest::askBeforeDiscarding() {
  Window win;
  QVERIFY(win.w.openProject(project_));
  win.editor()->trainingPanel()->epochsBox()->setValue(9);
  QVERIFY(win.w.isModified());
  win.presenter->answer = MessagePresenter::Choice::Cancel;
  QVERIFY(!win.w.newProject());
  QCOMPARE(win.presenter->asked, 1);
  QCOMPARE(win.w.currentConfig().training.epochs, 9);  // nothing lost
  win.presenter->answer = MessagePresenter::Choice::Discard;
  QVERIFY(win.w.newProject());
  QVERIFY(win.w.projectPath().isEmpty());
  QVERIFY(!win.w.isModified());
}

void DashboardTest::invalidFileShowsDialog() {
  Window win;
  QVERIFY(win.w.openProject(project_));
  const QString broken = tmp_.filePath("broken.strata");
  const QByteArray text =
      R"({"format": "strata-project", "version": 1, "name": "broken",
          "dataset": {"kind": "synthetic"},
          "model": {"layers": [{"type": "dense", "units": -3}]},
          "training": {"epochs": 0}, "strategy": {"name": "mirrored"}})";
  {
    QFile f(broken);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
  }
  QVERIFY(!win.w.openProject(broken));
  QCOMPARE(win.presenter->errors.size(), 1);
  QVERIFY2(win.presenter->errors[0].contains("model.layers[0].units: must be a positive integer, got -3"), qPrintable(win.presenter->errors[0]));
  QVERIFY(win.presenter->errors[0].contains("training.epochs"));
  QCOMPARE(win.w.projectPath(), QFileInfo(project_).absoluteFilePath());  // still the old project
  QFile f(broken);
  QVERIFY(f.open(QIODevice::ReadOnly));
  QCOMPARE(f.readAll(), text);  // untouched
  // Not JSON at all, and a missing file: same treatment.
  QFile junk(tmp_.filePath("junk.strata"));
  QVERIFY(junk.open(QIODevice::WriteOnly));
  junk.write("this is not json");
  junk.close();
  QVERIFY(!win.w.openProject(junk.fileName()));
  QVERIFY(!win.w.openProject(tmp_.filePath("missing.strata")));
  QCOMPARE(win.presenter->errors.size(), 3);
}

void DashboardTest::badDatasetShowsDialog() {
  Window win;
  QVERIFY(win.w.openProject(project_));
  auto* kind = win.editor()->datasetPanel()->kindBox();
  kind->setCurrentIndex(kind->findData("csv"));  // no CSV file chosen
  win.w.startRun();
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 30000);
  QCOMPARE(win.presenter->titles.value(0), QString("Cannot start the run"));
  // The engine names the missing file (older engines: "cannot open").
  QVERIFY2(win.presenter->errors.value(0).contains("cannot open") || win.presenter->errors.value(0).contains("no CSV file chosen"),
           qPrintable(win.presenter->errors.value(0)));
  QVERIFY(!win.editor()->locked());
  QVERIFY(!QDir(tmp_.filePath("tiny.runs")).entryList(QDir::Dirs | QDir::NoDotAndDotDot).isEmpty());  // only the earlier good run
}

void DashboardTest::divergenceIsMarked() {
  // The engine stops a run whose loss is not finite (status failed, message
  // naming NaN). Forcing real divergence depends on optimizer numerics, so
  // the engine's event sequence is replayed through the bridge's signal:
  // everything from the bridge on is the code under test.
  Window win;
  QVERIFY(win.w.openProject(project_));
  RunStartedEvent started;
  started.strategy = "mirrored";
  started.replicas = 2;
  started.devices = {"cpu:0", "cpu:1"};
  started.steps_per_epoch = 10;
  started.epochs = 1;
  std::vector<Event> batch{started};
  for (int i = 1; i <= 4; ++i) {
    StepEvent s;
    s.step = s.epoch_step = i;
    s.epoch = 1;
    s.time = 0.1 * i;
    s.replica_losses = {1.0 / i, 1.2 / i};
    s.loss = 1.1 / i;
    if (i == 4) s.replica_losses = {std::nan(""), 3.0}, s.loss = std::nan("");
    batch.push_back(s);
  }
  FinishedEvent f;
  f.status = "failed";
  f.message = "loss became NaN at step 4 (epoch 1): training diverged; try a lower learning rate";
  batch.push_back(LogEvent{"error", f.message, 0.4});
  batch.push_back(f);
  Q_EMIT win.w.runController()->bridge()->events(batch);
  const RunSeries& live = win.w.charts()->liveRun();
  QVERIFY(live.diverged_at && *live.diverged_at == 3);
  ChartView* loss = win.w.charts()->lossChart();
  QCOMPARE(loss->markerCount(), 1);
  QCOMPARE(loss->pointCount(loss->seriesIndex("loss (reduced)")), 4);  // the NaN point is kept (drawn as a gap)
  QVERIFY(win.w.statusPanel()->statusText().startsWith("Failed"));
  QVERIFY(win.w.statusPanel()->statusText().contains("NaN"));
  QCOMPARE(win.presenter->titles.value(0), QString("Training diverged"));
  QVERIFY(win.w.logPanel()->toPlainText().contains("loss became NaN"));
}

QString DashboardTest::copyProject(const QString& name) {
  const QString path = tmp_.filePath(name);
  QFile::remove(path);
  if (!QFile::copy(STRATA_SOURCE_DIR "/resources/examples/tiny-synthetic.strata", path)) return {};
  QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
  return path;
}

void DashboardTest::resumeStoppedRun() {
  Window win;
  const QString project = copyProject("resume.strata");
  QVERIFY(win.w.openProject(project));
  QVERIFY(win.editor()->strategyPanel()->setStrategy("mirrored"));
  win.editor()->devicesPanel()->setSelectedDevices({"cpu:0", "cpu:1"});
  win.editor()->trainingPanel()->epochsBox()->setValue(100000);
  win.editor()->trainingPanel()->batchBox()->setValue(50);
  QVERIFY(win.w.saveProject());
  win.w.startRun();
  const RunSeries& live = win.w.charts()->liveRun();
  QTRY_VERIFY_WITH_TIMEOUT(live.step.size() > 20, 60000);
  win.w.stopRun();
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 60000);
  QVERIFY(live.finished && live.finished->status == "stopped");
  const auto stopped_at = static_cast<int64_t>(live.step.back());
  const QString run_dir = win.w.runController()->lastRunDir();
  QVERIFY(QFile::exists(run_dir + "/checkpoints/ckpt-" + QString::number(stopped_at) + "/state.json"));

  RunHistoryPanel* history = win.w.historyPanel();
  QCOMPARE(history->runCount(), 1);
  QVERIFY(history->canResume(0));
  history->setCurrentRun(0);
  QVERIFY(history->resumeButton()->isEnabled());
  QTest::mouseClick(history->resumeButton(), Qt::LeftButton);
  QVERIFY(win.w.runController()->running());
  QVERIFY(!history->resumeButton()->isEnabled());  // one run at a time
  QTRY_VERIFY_WITH_TIMEOUT(live.step.size() > static_cast<size_t>(stopped_at) + 10, 60000);
  win.w.stopRun();
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 60000);
  QVERIFY2(win.presenter->errors.isEmpty(), qPrintable(win.presenter->errors.join("\n")));
  QVERIFY(live.finished && live.finished->status == "stopped");
  // The charts continue: the stopped run's steps, then the new ones, one
  // point per step with no gap or repeat.
  for (size_t i = 0; i < live.step.size(); ++i) QCOMPARE(live.step[i], double(i + 1));
  ChartView* loss = win.w.charts()->lossChart();
  QCOMPARE(loss->pointCount(loss->seriesIndex("loss (reduced)")), int(live.step.size()));
  QCOMPARE(loss->pointCount(loss->seriesIndex("replica 1")), int(live.step.size()));
  // Same run folder, one more checkpoint, both attempts in its events.
  QCOMPARE(win.w.runController()->lastRunDir(), run_dir);
  QCOMPARE(history->runCount(), 1);
  const auto last = static_cast<int64_t>(live.step.back());
  QVERIFY(last > stopped_at);
  QVERIFY(QFile::exists(run_dir + "/checkpoints/ckpt-" + QString::number(last) + "/state.json"));
  QFile events(run_dir + "/events.jsonl");
  QVERIFY(events.open(QIODevice::ReadOnly));
  QCOMPARE(events.readAll().count("\"type\":\"run_started\""), 2);
  resumed_run_ = run_dir;
}

void DashboardTest::evaluationViewAndExport() {
  if (resumed_run_.isEmpty()) QSKIP("needs the run of resumeStoppedRun");
  Window win;
  QVERIFY(win.w.openProject(tmp_.filePath("resume.strata")));
  win.w.historyPanel()->setCurrentRun(0);
  QVERIFY(win.w.historyPanel()->evaluateButton()->isEnabled());
  QTest::mouseClick(win.w.historyPanel()->evaluateButton(), Qt::LeftButton);
  EvaluationView* view = win.w.evaluationView();
  QVERIFY(view->isVisible());
  QVERIFY(view->checkpointCount() >= 1);
  QVERIFY(view->busy());  // off the UI thread: the window keeps turning
  QTRY_VERIFY_WITH_TIMEOUT(!view->busy() && view->result(), 60000);
  QVERIFY2(view->errorText().isEmpty(), qPrintable(view->errorText()));
  const auto& e = view->result()->evaluation;
  QCOMPARE(e.examples, int64_t(200));  // the synthetic set's test split
  // The table shows the engine's matrix; it sums to the test examples.
  QTableWidget* table = view->confusionTable();
  QCOMPARE(table->rowCount(), 4);
  QCOMPARE(table->columnCount(), 4);
  int64_t sum = 0;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) sum += table->item(r, c)->text().toLongLong();
  QCOMPARE(sum, e.examples);
  // Every sample cell says predicted (true); wrong ones, and only those, red.
  const auto& samples = view->result()->samples;
  QCOMPARE(int(samples.size()), 32);
  int wrong = 0;
  for (int i = 0; i < 32; ++i) {
    const bool is_wrong = samples[size_t(i)].predicted != samples[size_t(i)].label;
    wrong += is_wrong;
    QCOMPARE(view->sampleMarkedWrong(i), is_wrong);
    const QTableWidgetItem* item = view->sampleGrid()->item(i / 8, i % 8);
    QCOMPARE(item->foreground().color() == QColor(200, 30, 30), is_wrong);
  }
  qInfo("%d of 32 samples wrong, accuracy %.3f", wrong, e.accuracy);
  if (wrong == 0) {
    // The long run learned the blobs perfectly; a one-step run's checkpoint
    // gets some wrong, so the red marking is exercised too.
    Window early;
    QVERIFY(early.w.openProject(copyProject("early.strata")));
    early.editor()->trainingPanel()->epochsBox()->setValue(1);
    early.editor()->trainingPanel()->maxStepsBox()->setValue(1);
    early.editor()->trainingPanel()->batchBox()->setValue(8);
    QVERIFY(early.w.saveProject());
    early.w.startRun();
    QTRY_VERIFY_WITH_TIMEOUT(!early.w.runController()->running(), 60000);
    early.w.evaluateRun(early.w.runController()->lastRunDir());
    EvaluationView* v = early.w.evaluationView();
    QTRY_VERIFY_WITH_TIMEOUT(!v->busy() && v->result(), 60000);
    int marked = 0;
    for (int i = 0; i < 32; ++i) {
      const auto& smp = v->result()->samples[size_t(i)];
      QCOMPARE(v->sampleMarkedWrong(i), smp.predicted != smp.label);
      marked += v->sampleMarkedWrong(i);
    }
    QVERIFY2(marked > 0, "a one-step model should get some samples wrong");
  }

  // Export through the (injected) file dialog; an independent reader check.
  const QString out = tmp_.filePath("exported.safetensors");
  win.presenter->save_path = out;
  QSignalSpy spy(view, &EvaluationView::exported);
  QTest::mouseClick(view->findChild<QPushButton*>("exportWeights"), Qt::LeftButton);
  QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 1, 60000);
  QVERIFY2(spy.at(0).at(1).toString().isEmpty(), qPrintable(spy.at(0).at(1).toString()));
  const SafeTensorsFile file = read_safetensors(out.toStdString());
  int64_t params = 0;
  for (const auto& [name, t] : file.tensors) params += t.numel();
  QCOMPARE(params, int64_t(16 * 32 + 32 + 32 * 4 + 4));
}

void DashboardTest::configureMultiWorker(Window& win, const QString& project, int epochs) {
  QVERIFY(win.w.openProject(project));
  auto* mw = win.w.findChild<QRadioButton*>("strategy_multi_worker_mirrored");
  QVERIFY(mw && mw->isEnabled());
  QTest::mouseClick(mw, Qt::LeftButton, Qt::NoModifier, QPoint(8, mw->height() / 2));
  QVERIFY(mw->isChecked());
  MultiWorkerPanel* panel = win.editor()->strategyPanel()->multiWorkerPanel();
  QVERIFY(panel->isVisibleTo(win.editor()->strategyPanel()));
  panel->processesBox()->setValue(2);
  win.editor()->devicesPanel()->setSelectedDevices({"cpu:0"});  // per worker
  win.editor()->trainingPanel()->epochsBox()->setValue(epochs);
  win.editor()->trainingPanel()->batchBox()->setValue(50);
  QVERIFY(win.w.saveProject());
}

void DashboardTest::multiWorkerRun() {
  if (!mpi_built() || find_mpirun().isEmpty()) QSKIP("needs an MPI build and mpirun");
  Window win;
  const QString project = copyProject("multi.strata");
  configureMultiWorker(win, project, 2);
  QByteArray before;
  {
    QFile f(project);
    QVERIFY(f.open(QIODevice::ReadOnly));
    before = f.readAll();
  }
  win.w.startRun();
  QVERIFY(win.w.runController()->running());
  QVERIFY(win.w.runController()->multiWorker());
  auto* pause = win.w.findChild<QAction*>("pauseAction");
  QVERIFY(!pause->isEnabled());
  QVERIFY(pause->toolTip().contains("multi-worker"));
  QVERIFY(win.w.runController()->lastCommand().contains("--strategy"));
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 120000);
  QVERIFY2(win.presenter->errors.isEmpty(), qPrintable(win.presenter->errors.join("\n")));
  QVERIFY2(win.w.statusPanel()->statusText().startsWith("Completed"),
           qPrintable(win.w.statusPanel()->statusText() + "\n" + win.w.logPanel()->toPlainText()));
  const RunSeries& live = win.w.charts()->liveRun();
  QVERIFY(live.started);
  QCOMPARE(live.started->workers, 2);
  QCOMPARE(live.started->replicas, 2);
  const int steps = 2 * 16;
  QCOMPARE(int(live.step.size()), steps);
  ChartView* loss = win.w.charts()->lossChart();
  for (const char* name : {"replica 0", "replica 1", "loss (reduced)"}) QCOMPARE(loss->pointCount(loss->seriesIndex(name)), steps);
  ChartView* workers = win.w.charts()->workerChart();
  QCOMPARE(workers->seriesCount(), 2);
  QCOMPARE(workers->pointCount(workers->seriesIndex("worker 1")), steps);
  QVERIFY2(win.w.statusPanel()->workersText().startsWith("2 worker"), qPrintable(win.w.statusPanel()->workersText()));
  // strata-run wrote the run folder; the user's project file is untouched.
  const QString run_dir = win.w.runController()->lastRunDir();
  QVERIFY(QFile::exists(run_dir + "/events.jsonl"));
  QVERIFY(QFile::exists(run_dir + "/project.strata"));
  QFile f(project);
  QVERIFY(f.open(QIODevice::ReadOnly));
  QCOMPARE(f.readAll(), before);
}

void DashboardTest::multiWorkerStop() {
  if (!mpi_built() || find_mpirun().isEmpty()) QSKIP("needs an MPI build and mpirun");
  Window win;
  configureMultiWorker(win, copyProject("multi-stop.strata"), 100000);
  win.w.startRun();
  const RunSeries& live = win.w.charts()->liveRun();
  QTRY_VERIFY_WITH_TIMEOUT(live.step.size() > 20, 60000);
  win.w.stopRun();
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 60000);
  QVERIFY2(live.finished && live.finished->status == "stopped", qPrintable(win.w.logPanel()->toPlainText().right(2000)));
  QVERIFY2(win.w.statusPanel()->statusText().startsWith("Stopped"), qPrintable(win.w.statusPanel()->statusText()));
  // Gracefully: the ranks checkpointed the last step, so the run can resume.
  const QString run_dir = win.w.runController()->lastRunDir();
  QVERIFY(QFile::exists(run_dir + "/checkpoints/ckpt-" + QString::number(qint64(live.step.back())) + "/state.json"));
  QVERIFY(win.w.historyPanel()->canResume(0));
}

void DashboardTest::screenshotMidRun() {
  Window win;
  const QString fashion = STRATA_SOURCE_DIR "/resources/examples/fashion-mlp.strata";
  QVERIFY(win.w.openTemplate(fashion));
  if (!win.editor()->strategyPanel()->setStrategy("mirrored")) QFAIL("mirrored unavailable");
  win.editor()->devicesPanel()->setSelectedDevices({"cpu:0", "cpu:1"});
  win.editor()->trainingPanel()->maxStepsBox()->setValue(120);
  win.editor()->trainingPanel()->epochsBox()->setValue(12);
  win.w.resize(1600, 1000);
  win.w.show();
  QTRY_VERIFY_WITH_TIMEOUT(!win.editor()->datasetPanel()->previewBusy(), 60000);
  if (!win.editor()->datasetPanel()->previewError().isEmpty()) QSKIP("Fashion-MNIST is not installed");
  win.w.charts()->setSmoothing(0.6);
  win.w.startRun();
  const RunSeries& live = win.w.charts()->liveRun();
  QTRY_VERIFY_WITH_TIMEOUT(live.epochs.size() >= 4, 300000);
  win.w.pauseRun();
  QTest::qWait(200);
  win.w.runController()->bridge()->drainNow();
  QCoreApplication::processEvents();
  const QString dir = STRATA_BINARY_DIR "/ui-screenshots";
  QDir().mkpath(dir);
  const QImage shot = win.w.grab().toImage();
  QVERIFY(shot.width() >= 1200);
  QVERIFY(shot.save(dir + "/dashboard.png"));
  qInfo("screenshot: %s", qPrintable(dir + "/dashboard.png"));
  win.w.stopRun();
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 60000);
}

QTEST_MAIN(DashboardTest)
#include "test_ui_dashboard.moc"
