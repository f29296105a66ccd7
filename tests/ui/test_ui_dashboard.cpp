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
#include <QTest>
#include <cmath>

#include "ChartsPanel.h"
#include "ConfigEditor.h"
#include "DatasetPanel.h"
#include "DevicesPanel.h"
#include "EngineBridge.h"
#include "LogPanel.h"
#include "MainWindow.h"
#include "MessagePresenter.h"
#include "ModelPanel.h"
#include "RunController.h"
#include "RunHistoryPanel.h"
#include "StatusPanel.h"
#include "StrategyPanel.h"
#include "TrainingPanel.h"

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
  void screenshotMidRun();

private:
  // Opens the tiny synthetic project and turns it into a 2-replica Mirrored
  // run through the panels' own widgets.
  void configureMirrored(Window& win, int epochs);
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
  for (const char* name : {"multi_worker_mirrored", "parameter_server"}) {
    auto* b = win.w.findChild<QRadioButton*>(QString("strategy_") + name);
    QVERIFY(b);
    QVERIFY(!b->isEnabled());
    QVERIFY2(b->toolTip().contains("Not available"), qPrintable(b->toolTip()));
  }
  QVERIFY(win.w.findChild<QRadioButton*>("strategy_multi_worker_mirrored")->toolTip().contains("MPI"));
  for (const char* name : {"one_device", "mirrored", "central_storage"})
    QVERIFY(win.w.findChild<QRadioButton*>(QString("strategy_") + name)->isEnabled());
}

void DashboardTest::modelEditorChecksShapes() {
  Window win;
  QVERIFY(win.w.openProject(project_));
  ModelPanel* model = win.editor()->modelPanel();
  QTRY_VERIFY(!win.editor()->datasetPanel()->previewBusy());
  QCOMPARE(win.editor()->datasetPanel()->previewRows(), qint64(800));
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
  QVERIFY2(win.presenter->errors.value(0).contains("cannot open"), qPrintable(win.presenter->errors.value(0)));
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
