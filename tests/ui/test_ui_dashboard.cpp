// Drives the dashboard the way a user would: configure a Mirrored run on two
// CPU replicas through the panels, train, pause/resume/stop, save and reopen,
// broken files, divergence, run history overlays, a ParameterServer run and
// its charts (staleness, server updates, lost workers), in this process and
// across mpirun processes, and a mid-run screenshot.
#include <qcustomplot.h>
#include <QAbstractSpinBox>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QRadioButton>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QScrollArea>
#include <QScrollBar>
#include <QSet>
#include <QSignalSpy>
#include <QSpinBox>
#include <QSplitter>
#include <QTabBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>
#include <algorithm>
#include <cmath>

#include "ChartsPanel.h"
#include "ConfigEditor.h"
#include "DatasetPanel.h"
#include "DevicesPanel.h"
#include "EngineBridge.h"
#include "EvaluationView.h"
#include "LogPanel.h"
#include "MainWindow.h"
#include "MessagePresenter.h"
#include "ModelPanel.h"
#include "MultiWorkerLaunch.h"
#include "MultiWorkerPanel.h"
#include "ParameterServerCharts.h"
#include "ParameterServerSettings.h"
#include "RunController.h"
#include "RunHistory.h"
#include "RunHistoryPanel.h"
#include "SchedulePanel.h"
#include "SettingsDiffDialog.h"
#include "StatusPanel.h"
#include "StrategyPanel.h"
#include "TimelinePanel.h"
#include "TrainingPanel.h"
#include "core/Device.h"
#include "data/FashionMnist.h"
#include "distribute/Cluster.h"
#include "project/RunNotes.h"
#include "trace/ChromeTrace.h"
#include "train/EventJson.h"
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
  QString open_path;  // what the "open file dialog" answers
  QStringList open_filters;
  QString openFileName(QWidget*, const QString&, const QString&, const QString& filter) override {
    open_filters << filter;
    return open_path;
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

// A two-replica Mirrored run's events as the engine emits them: run_started,
// then `epochs` epochs of `per_epoch` steps, each with `loss(step)` for both
// replicas and the reduced loss.
std::vector<Event> mirrored_run(int epochs, int per_epoch, double (*loss)(int)) {
  RunStartedEvent started;
  started.strategy = "mirrored";
  started.replicas = 2;
  started.workers = 1;
  started.steps_per_epoch = per_epoch;
  started.epochs = epochs;
  std::vector<Event> batch{started};
  for (int i = 1; i <= epochs * per_epoch; ++i) {
    StepEvent st;
    st.step = i;
    st.epoch = 1 + (i - 1) / per_epoch;
    st.epoch_step = 1 + (i - 1) % per_epoch;
    st.time = 0.1 * i;
    st.loss = loss(i);
    st.replica_losses = {st.loss, st.loss};
    batch.push_back(st);
  }
  return batch;
}

// Saves a widget as ui-screenshots/<file> (docs/dashboard.md shows them).
void save_screenshot(QWidget* w, const QString& file) {
  const QString dir = STRATA_BINARY_DIR "/ui-screenshots";
  QDir().mkpath(dir);
  QCoreApplication::processEvents();
  QVERIFY(w->grab().toImage().save(dir + "/" + file));
}

// One rank's steps as a mirrored replica records them: the step's frame,
// forward, backward with the all-reduce on the comm stream under its end, the
// wait for the other ranks, the optimizer. Times in ms from `t0_us`; each
// step takes `scale` times the base (a slower rank waits less).
std::vector<trace::Span> rank_steps(int steps, double t0_us, double scale) {
  using trace::SpanKind;
  const trace::Lane replica{trace::LaneKind::Replica, 0}, comm{trace::LaneKind::CommStream, 0};
  std::vector<trace::Span> out;
  auto add = [&](SpanKind k, trace::Lane lane, int step, double start_ms, double ms, int64_t bytes = 0) {
    out.push_back(trace::Span{k, lane, step, t0_us + start_ms * 1000, ms * 1000, bytes});
  };
  for (int step = 1; step <= steps; ++step) {
    const double at = (step - 1) * 12.0;
    add(SpanKind::Step, replica, step, at, 10);
    add(SpanKind::Forward, replica, step, at, 2 * scale);
    add(SpanKind::Backward, replica, step, at + 2 * scale, 4 * scale);
    add(SpanKind::AllReduce, comm, step, at + 5 * scale, 2.5, 1 << 20);
    add(SpanKind::CollectiveWait, replica, step, at + 6 * scale, 9 - 6 * scale);
    add(SpanKind::Optimizer, replica, step, at + 9, 1);
  }
  return out;
}

void write_file(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(bytes);
}

// The Timeline tab of a shown window: its tab clicked, the panel returned.
TimelinePanel* show_timeline_tab(Window& win) {
  TimelinePanel* timeline = win.w.timelinePanel();
  auto* bottom = timeline->parentWidget() ? qobject_cast<QTabWidget*>(timeline->parentWidget()->parentWidget()) : nullptr;
  if (!bottom) return nullptr;
  QTabBar* tabs = bottom->tabBar();
  for (int i = 0; i < tabs->count(); ++i)
    if (tabs->tabText(i) == "Timeline") QTest::mouseClick(tabs, Qt::LeftButton, Qt::NoModifier, tabs->tabRect(i).center());
  return bottom->currentWidget() == timeline ? timeline : nullptr;
}

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
  void strategyPageNeverClips();
  void settingsPagesFitTheirWidth();
  void deviceListFitsANarrowPanel();
  void deviceNotesSayWhySimDevicesAreMissing();
  void modelEditorChecksShapes();
  void mirroredRunFillsCharts();
  void timelineTabFillsDuringRun();
  void timelineOpensMergedTrace();
  void timelineReadsTracesOffTheWindowThread();
  void runHistoryOverlays();
  void runTableNotesAndComparison();
  void pauseResumeStop();
  void saveAndReopen();
  void scheduleAndEarlyStopping();
  void askBeforeDiscarding();
  void invalidFileShowsDialog();
  void badDatasetShowsDialog();
  void divergenceIsMarked();
  void outOfDeviceMemoryIsNamed();
  void newAndOpenStartClean();
  void wordingAndHelp();
  void datasetPreviewNeverStale();
  void resumeStoppedRun();
  void evaluationViewAndExport();
  void multiWorkerRun();
  void multiWorkerStop();
  void parameterServerRunFillsCharts();
  void lostWorkerIsMarked();
  void parameterServerSaveAndReopen();
  void parameterServerMpirunArguments();
  void mpirunLaunchOptionsAreValidated();
  void parameterServerProcessesRun();
  void parameterServerProcessesStop();
  void screenshotMidRun();
  void screenshotParameterServer();
  void screenshotMergedTrace();

private:
  // Opens the tiny synthetic project and turns it into a 2-replica Mirrored
  // run through the panels' own widgets.
  void configureMirrored(Window& win, int epochs);
  // A copy of the tiny project under another name (its own run history).
  QString copyProject(const QString& name);
  // MultiWorkerMirrored, 2 processes of one cpu:0 replica each.
  void configureMultiWorker(Window& win, const QString& project, int epochs);
  // Starts the configured mpirun run, stops it after 20 steps and checks it
  // ended "stopped" with a checkpoint of its last step.
  void stopAcrossProcessesGracefully(Window& win);
  // Trains the configured Fashion-MNIST project 4 short epochs (120 steps
  // each), pauses, and saves the window as ui-screenshots/<file>.
  void screenshotAfterFourEpochs(Window& win, const QString& file);
  // ParameterServer on cpu:0 and cpu:1 (two workers), chosen and set through
  // the strategy panel's widgets; bound < 0 = unbounded.
  void configureParameterServer(Window& win, const QString& project, int epochs, int servers, int bound);
  // Then "as processes with mpirun" with `workers` worker processes, through
  // the panels; the Devices tab keeps one device (each worker's).
  void chooseParameterServerProcesses(Window& win, int workers);
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
  StrategyPanel* panel = win.editor()->strategyPanel();
  // ParameterServer runs in this process: always available, its tooltip is
  // the description, and its settings stay hidden until it is chosen.
  auto* ps = win.w.findChild<QRadioButton*>("strategy_parameter_server");
  QVERIFY(ps && ps->isEnabled());
  QVERIFY(panel->isAvailable("parameter_server"));
  QVERIFY(panel->unavailableReason("parameter_server").isEmpty());
  QVERIFY2(ps->toolTip().contains("parameter servers") && !ps->toolTip().contains("Not available"), qPrintable(ps->toolTip()));
  QVERIFY(!panel->parameterServerSettings()->isVisibleTo(panel));
  // Multi-worker runs are launched with mpirun: available exactly when the
  // engine has MPI and mpirun is on PATH, else the tooltip says what lacks.
  auto* mw = win.w.findChild<QRadioButton*>("strategy_multi_worker_mirrored");
  QVERIFY(mw);
  const bool can = mpi_built() && !find_mpirun().isEmpty() && !find_strata_run().isEmpty();
  QCOMPARE(mw->isEnabled(), can);
  QCOMPARE(panel->isAvailable("multi_worker_mirrored"), can);
  if (!can) {
    QVERIFY2(mw->toolTip().contains("mpirun") && mw->toolTip().contains("Not available"), qPrintable(mw->toolTip()));
    QVERIFY(!panel->setStrategy("multi_worker_mirrored"));  // a disabled one cannot be chosen
  }
  for (const char* name : {"one_device", "mirrored", "central_storage"})
    QVERIFY(win.w.findChild<QRadioButton*>(QString("strategy_") + name)->isEnabled());
  // A name the engine does not know is neither listed nor available.
  QVERIFY(!panel->isAvailable("no_such_strategy"));
  QVERIFY(!panel->setStrategy("no_such_strategy"));
  QCOMPARE(panel->unavailableReason("no_such_strategy"), QString("unknown strategy"));
  QCOMPARE(win.w.findChildren<QRadioButton*>(QRegularExpression("^strategy_")).size(), 5);
}

// The Strategy & devices page in a small window, with the longest settings
// showing (ParameterServer as mpirun processes, then MultiWorkerMirrored):
// every row gets the height it needs and no two rows overlap; the page
// scrolls instead, and the space left goes to the device list.
void DashboardTest::strategyPageNeverClips() {
  Window win;
  QVERIFY(win.w.openProject(project_));
  win.w.resize(1000, 560);
  win.w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&win.w));
  win.editor()->setCurrentIndex(0);
  StrategyPanel* panel = win.editor()->strategyPanel();
  auto check = [&](const char* what) {
    QApplication::processEvents();
    QList<QWidget*> rows;
    for (QWidget* w : panel->findChildren<QWidget*>()) {
      if (!w->isVisibleTo(panel) || !(qobject_cast<QLabel*>(w) || qobject_cast<QAbstractButton*>(w) ||
                                      qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QLineEdit*>(w)))
        continue;
      if (qobject_cast<QAbstractSpinBox*>(w->parentWidget())) continue;  // a spin box's own line edit
      const int need = w->hasHeightForWidth() ? w->heightForWidth(w->width()) : w->minimumSizeHint().height();
      QVERIFY2(w->height() >= need, qPrintable(QString("%1: %2 '%3' is %4 px high, needs %5").arg(what, w->metaObject()->className(),
                                                                                                    w->objectName()).arg(w->height()).arg(need)));
      rows << w;
    }
    for (int i = 0; i < rows.size(); ++i)
      for (int j = i + 1; j < rows.size(); ++j) {
        const QRect a(rows[i]->mapTo(panel, QPoint(0, 0)), rows[i]->size()), b(rows[j]->mapTo(panel, QPoint(0, 0)), rows[j]->size());
        QVERIFY2(!a.intersects(b), qPrintable(QString("%1: '%2' overlaps '%3'").arg(what, rows[i]->objectName(), rows[j]->objectName())));
      }
  };
  auto click = [](QAbstractButton* b) { QTest::mouseClick(b, Qt::LeftButton, Qt::NoModifier, QPoint(8, b->height() / 2)); };
  auto* ps = win.w.findChild<QRadioButton*>("strategy_parameter_server");
  click(ps);
  QVERIFY(ps->isChecked());
  check("parameter server");
  auto* processes = win.w.findChild<QRadioButton*>("psProcesses");
  if (processes->isEnabled()) {
    click(processes);
    QVERIFY(processes->isChecked());
    check("parameter server as processes");
  }
  auto* mw = win.w.findChild<QRadioButton*>("strategy_multi_worker_mirrored");
  if (mw->isEnabled()) {
    click(mw);
    check("multi-worker");
  }
  // The device list, not empty space, takes what is left of a tall window.
  win.w.resize(1000, 1400);
  QApplication::processEvents();
  QVERIFY(win.editor()->devicesPanel()->height() > panel->height() / 2);
}

// How many different x the editable fields of a settings page start at.
static int field_columns(QWidget* page) {
  QSet<int> columns;
  for (QWidget* w : page->findChildren<QWidget*>())
    if (w->isVisibleTo(page) &&
        (qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QLineEdit*>(w) || qobject_cast<QComboBox*>(w)) &&
        !qobject_cast<QAbstractSpinBox*>(w->parentWidget()))
      columns.insert(w->mapTo(page, QPoint(0, 0)).x());
  return static_cast<int>(columns.size());
}

// Every settings page at the window size of the docs' screenshots, with the
// longest optional rows showing (SGD's, then Adam's): no page needs a
// horizontal scroll bar, and the fields of the Training page (either
// optimizer) and of the Dataset page (any source) start at one x, so the
// rows that come and go line up with the others. Saves each page as
// ui-screenshots/settings-<n>.png. The devices are listed as a build without
// CUDA lists them: the longest reason for having no GPU, which once widened
// the Strategy page past the window in such builds (and only there).
void DashboardTest::settingsPagesFitTheirWidth() {
  const GpuProvider cuda = set_gpu_provider({});
  const auto restore = qScopeGuard([&] { set_gpu_provider(cuda); });
  Window win;
  QVERIFY(win.w.openTemplate(STRATA_SOURCE_DIR "/resources/examples/fashion-mlp.strata"));
  win.w.resize(1600, 1000);
  win.w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&win.w));
  ConfigEditor* editor = win.editor();
  // The Dataset page with its preview (the sample grid and class chart are
  // its widest rows), not the "Loading…" before it.
  QTRY_VERIFY_WITH_TIMEOUT(editor->datasetPanel()->previewRows() > 0, 30000);
  TrainingPanel* training = editor->trainingPanel();
  auto* optimizer = training->findChild<QComboBox*>("optimizer");
  QVERIFY(optimizer);
  auto* timeline = training->findChild<QCheckBox*>("recordTimeline");
  QVERIFY(timeline);
  QTest::mouseClick(timeline, Qt::LeftButton, Qt::NoModifier, QPoint(8, timeline->height() / 2));
  QVERIFY(timeline->isChecked());
  for (const char* type : {"sgd", "adam"}) {
    optimizer->setCurrentIndex(optimizer->findData(type));
    for (int i = 0; i < editor->count(); ++i) {
      editor->setCurrentIndex(i);
      QApplication::processEvents();
      if (auto* area = qobject_cast<QScrollArea*>(editor->currentWidget()))
        QVERIFY2(!area->horizontalScrollBar()->isVisible(), qPrintable(QString("%1 (%2): the page needs %3 px, has %4")
                                                                           .arg(editor->tabText(i), type)
                                                                           .arg(area->widget()->minimumSizeHint().width())
                                                                           .arg(area->viewport()->width())));
      save_screenshot(editor, QString("settings-%1.png").arg(i));
    }
    QVERIFY2(field_columns(training) == 1, type);
  }
  DatasetPanel* dataset = editor->datasetPanel();
  editor->setCurrentIndex(1);
  auto* source = dataset->findChild<QComboBox*>("datasetKind");
  QVERIFY(source);
  for (int i = 0; i < source->count(); ++i) {
    source->setCurrentIndex(i);
    QApplication::processEvents();
    QVERIFY2(field_columns(dataset) == 1, qPrintable(source->currentText()));
  }
}

namespace {
// A GPU with a long name, as a workstation's CUDA build lists it.
GpuInventory long_named_gpu() {
  DeviceInfo gpu{Device{DeviceKind::Gpu, 0}, "NVIDIA RTX 6000 Ada Generation Laptop GPU with a very long model name",
                 int64_t{48} << 30, 1, "compute capability 8.9, 142 SMs, driver 13.0, CUDA runtime 13.0"};
  return {{gpu}, {}};
}
}  // namespace

// A long device name is shortened in the middle, not scrolled sideways; the
// whole line and the GPU's capability are the item's tooltip.
void DashboardTest::deviceListFitsANarrowPanel() {
  const GpuProvider cuda = set_gpu_provider(GpuProvider{long_named_gpu, nullptr, nullptr});
  const auto restore = qScopeGuard([&] { set_gpu_provider(cuda); });
  DevicesPanel panel;
  panel.resize(320, 400);
  panel.show();
  QVERIFY(QTest::qWaitForWindowExposed(&panel));
  auto* list = panel.findChild<QListWidget*>("deviceList");
  QVERIFY(list);
  QListWidgetItem* gpu = nullptr;
  for (int i = 0; i < list->count(); ++i)
    if (list->item(i)->data(Qt::UserRole).toString() == "gpu:0") gpu = list->item(i);
  QVERIFY(gpu);
  QVERIFY(list->fontMetrics().horizontalAdvance(gpu->text()) > list->viewport()->width());
  QVERIFY(!list->horizontalScrollBar()->isVisible());
  QCOMPARE(list->textElideMode(), Qt::ElideMiddle);
  QVERIFY2(gpu->toolTip().contains("Laptop GPU with a very long model name · 48.0 GiB device memory"),
           qPrintable(gpu->toolTip()));
  QVERIFY2(gpu->toolTip().contains("compute capability 8.9"), qPrintable(gpu->toolTip()));
  // A GPU is there: no "No GPU" line.
  for (auto* label : panel.findChildren<QLabel*>()) QVERIFY2(!label->text().startsWith("No GPU"), qPrintable(label->text()));
}

// A bad STRATA_SIM_DEVICES does not stop the window from opening: the panel
// lists the other devices and says below them why there are no sim devices.
void DashboardTest::deviceNotesSayWhySimDevicesAreMissing() {
  const QByteArray saved = qgetenv("STRATA_SIM_DEVICES");
  const auto restore = qScopeGuard(
      [&] { saved.isNull() ? qunsetenv("STRATA_SIM_DEVICES") : qputenv("STRATA_SIM_DEVICES", saved); });
  auto listed = [](const DevicesPanel& panel) {
    QStringList out;
    auto* list = panel.findChild<QListWidget*>("deviceList");
    for (int i = 0; list && i < list->count(); ++i) out << list->item(i)->data(Qt::UserRole).toString();
    return out;
  };
  qputenv("STRATA_SIM_DEVICES", "lots");
  DevicesPanel bad;
  bad.show();
  QVERIFY(QTest::qWaitForWindowExposed(&bad));
  auto* notes = bad.findChild<QLabel*>("deviceNotes");
  QVERIFY(notes);
  QVERIFY(notes->isVisible());
  QVERIFY2(notes->text().contains("STRATA_SIM_DEVICES: expected a number of simulated devices from 0 to 8, got 'lots'; "
                                  "no simulated devices are listed."),
           qPrintable(notes->text()));
  QVERIFY(listed(bad).contains("cpu:0"));
  QVERIFY(listed(bad).filter("sim:").isEmpty());

  qputenv("STRATA_SIM_DEVICES", "1");
  DevicesPanel good;
  QVERIFY(listed(good).contains("sim:0"));
  QVERIFY2(!good.findChild<QLabel*>("deviceNotes")->text().contains("STRATA_SIM_DEVICES"),
           qPrintable(good.findChild<QLabel*>("deviceNotes")->text()));
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
  // Numbered as the table numbers its rows (from 1), with the file's path.
  QVERIFY2(model->problems().contains("Layer 1 — model.layers[0].units: must be a positive integer, got -3"),
           qPrintable(model->problems()));
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
  // Settings round-trip through their text, arrays included (the comma in
  // kernel_size=[5,5] once split the value in two).
  const nlohmann::json conv = {{"type", "conv2d"}, {"filters", 32}, {"kernel_size", {5, 5}}, {"padding", "same"}};
  QCOMPARE(ModelPanel::settingsText(conv), QString("filters=32, kernel_size=[5,5], padding=same"));
  QVERIFY(ModelPanel::parseSettings("conv2d", ModelPanel::settingsText(conv)) == conv);
  // The Add button, clicked: after the selected layer; with none selected,
  // before the output layer.
  auto* add = [&] {
    for (auto* b : model->findChildren<QPushButton*>())
      if (b->text() == "Add") return b;
    return static_cast<QPushButton*>(nullptr);
  }();
  QVERIFY(add);
  auto* table = model->findChild<QTableWidget*>();
  QVERIFY(table);
  table->setCurrentCell(-1, -1);
  QTest::mouseClick(add, Qt::LeftButton);
  QCOMPARE(model->layerCount(), 3);
  QCOMPARE(model->layers()[2]["units"].get<int>(), 3);  // the output layer stays last
  table->setCurrentCell(0, 0);
  QTest::mouseClick(add, Qt::LeftButton);
  QCOMPARE(model->layerCount(), 4);
  QCOMPARE(table->currentRow(), 1);  // the new one, right after the selected
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

// The Training tab's checkbox (clicked, on a shown window) records the step
// timeline: the Timeline tab fills with each replica's lanes and the run
// folder gets trace.json; the checkbox is a run option, not project content.
void DashboardTest::timelineTabFillsDuringRun() {
  Window win;
  configureMirrored(win, 1);
  // A project of its own: the run history tests count the runs of project_.
  const QString project = tmp_.filePath("timeline.strata");
  QVERIFY(win.w.saveProjectAs(project));
  win.w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&win.w));
  QTabBar* tabs = win.editor()->tabBar();
  int training_tab = -1;
  for (int i = 0; i < tabs->count(); ++i)
    if (tabs->tabText(i) == "Training") training_tab = i;
  QVERIFY(training_tab >= 0);
  QTest::mouseClick(tabs, Qt::LeftButton, Qt::NoModifier, tabs->tabRect(training_tab).center());
  auto* record = win.w.findChild<QCheckBox*>("recordTimeline");
  auto* device_lanes = win.w.findChild<QComboBox*>("deviceLanes");
  QVERIFY(record && !record->isChecked());
  QVERIFY(device_lanes && !device_lanes->isEnabled());  // a choice of the timeline's
  QTRY_VERIFY(record->isVisible());
  QTest::mouseClick(record, Qt::LeftButton, Qt::NoModifier, QPoint(8, record->height() / 2));
  QVERIFY(record->isChecked());
  QVERIFY(device_lanes->isEnabled());
  // Device lanes in every step, chosen with the keyboard, reach the run's configuration.
  auto* training = win.w.findChild<TrainingPanel*>();
  QVERIFY(training);
  RunConfig applied;
  training->applyTo(applied);
  QVERIFY(applied.trace.enabled);
  QCOMPARE(int(applied.trace.device_lanes), int(trace::DeviceLanes::Sampled));
  device_lanes->setFocus();
  QTest::keyClick(device_lanes, Qt::Key_Down);
  training->applyTo(applied);
  QCOMPARE(int(applied.trace.device_lanes), int(trace::DeviceLanes::EveryStep));
  QVERIFY(!win.w.isModified());  // nothing of the project changed
  win.w.startRun();
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 120000);
  QVERIFY2(win.presenter->errors.isEmpty(), qPrintable(win.presenter->errors.join("\n")));

  TimelinePanel* timeline = win.w.timelinePanel();
  QCOMPARE(timeline->laneLabel(0), QString("replica 0"));
  QCOMPARE(timeline->laneLabel(1), QString("replica 1"));
  QVERIFY(timeline->spansShown() > 0);
  const std::vector<int64_t> steps = timeline->stepsKept();
  QCOMPARE(int(steps.size()), 16);  // one epoch of 16 steps, fewer than the 20 it keeps
  QCOMPARE(steps.back(), int64_t{16});
  QCOMPARE(timeline->summaryTable()->rowCount(), 2);
  QVERIFY(!timeline->showingEmptyState());
  const QString run_dir = win.w.runController()->lastRunDir();
  QVERIFY(QFile::exists(run_dir + "/trace.json"));
  // docs/timeline.md shows it.
  auto* bottom = timeline->parentWidget() ? qobject_cast<QTabWidget*>(timeline->parentWidget()->parentWidget()) : nullptr;
  QVERIFY(bottom);
  bottom->setCurrentWidget(timeline);
  win.w.resize(1600, 1000);
  save_screenshot(&win.w, "timeline.png");
  QVERIFY(run_dir.startsWith(tmp_.filePath("timeline.runs")));
  // The run history's Timeline button shows the run's trace.json: one
  // process, so its lanes read as they did live.
  bottom->setCurrentWidget(win.w.historyPanel());
  win.w.historyPanel()->setCurrentRun(0);
  QCOMPARE(win.w.historyPanel()->currentRunDir(), run_dir);
  QPushButton* open_trace = win.w.historyPanel()->timelineButton();
  QTRY_VERIFY(open_trace->isVisible());
  QVERIFY(open_trace->isEnabled());
  QTest::mouseClick(open_trace, Qt::LeftButton);
  QCOMPARE(bottom->currentWidget(), timeline);  // at once, while the file is read
  QTRY_VERIFY(!win.w.readingTrace());
  QVERIFY2(win.presenter->errors.isEmpty(), qPrintable(win.presenter->errors.join("\n")));
  QVERIFY(timeline->showingFile());
  QCOMPARE(timeline->shownFile(), run_dir + "/trace.json");
  QCOMPARE(timeline->laneLabel(0), QString("replica 0"));
  QCOMPARE(timeline->laneLabel(1), QString("replica 1"));
  QCOMPARE(timeline->stepsKept(), steps);
  QCOMPARE(timeline->summaryTable()->rowCount(), 2);
  QFile saved(project);
  QVERIFY(saved.open(QIODevice::ReadOnly));
  QVERIFY(!saved.readAll().contains("trace"));
}

// A merged trace of two ranks (each rank's file written with its own clock
// offset, merged as strata-run --merge-traces does) opened with the Timeline
// tab's button: each rank's lanes are rows of their own, the summary has a
// row per rank's replica, hovering names a rank's span; a bad file is an
// error naming it, and the merged trace stays shown.
void DashboardTest::timelineOpensMergedTrace() {
  const QString r0 = tmp_.filePath("mt.rank0.json"), r1 = tmp_.filePath("mt.rank1.json"),
                merged = tmp_.filePath("mt-merged.json");
  const double t0 = 7'000'000'000.0, offset1 = -2'500.25;
  {
    trace::ChromeTraceWriter w(r0.toStdString(), {"two ranks", 0, "node-a", 0});
    w.write(rank_steps(12, t0, 1.0));
  }
  {
    // Rank 1's clock runs offset1 behind: its times land on rank 0's after the merge.
    trace::ChromeTraceWriter w(r1.toStdString(), {"two ranks", 1, "node-b", offset1});
    w.write(rank_steps(12, t0 + 300 - offset1, 1.4));
  }
  trace::merge_chrome_traces({r0.toStdString(), r1.toStdString()}, merged.toStdString());

  Window win;
  win.w.resize(1600, 1200);
  win.w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&win.w));
  if (auto* right = qobject_cast<QSplitter*>(win.w.charts()->parentWidget())) right->setSizes({400, 800});
  TimelinePanel* timeline = show_timeline_tab(win);
  QVERIFY(timeline);
  auto* open = timeline->findChild<QPushButton*>("openTraceButton");
  QVERIFY(open);
  QTRY_VERIFY(open->isVisible());
  win.presenter->open_path = merged;
  QTest::mouseClick(open, Qt::LeftButton);
  QTRY_VERIFY(!win.w.readingTrace());
  QVERIFY2(win.presenter->errors.isEmpty(), qPrintable(win.presenter->errors.join("\n")));
  QCOMPARE(win.presenter->open_filters.size(), 1);
  QVERIFY(win.presenter->open_filters[0].contains("*.json"));
  QVERIFY(timeline->showingFile());
  QCOMPARE(timeline->shownFile(), merged);
  QVERIFY2(timeline->sourceText().contains("mt-merged.json") && timeline->sourceText().contains("ranks 0, 1"),
           qPrintable(timeline->sourceText()));

  QStringList lanes;
  for (int row = 0; row < timeline->laneCount(); ++row) lanes << timeline->laneLabel(row);
  QCOMPARE(lanes,
           (QStringList{"rank 0 · replica 0", "rank 0 · replica 0 comm", "rank 1 · replica 0", "rank 1 · replica 0 comm"}));
  QCOMPARE(timeline->fileStepCount(), 12);
  QCOMPARE(int(timeline->stepsKept().size()), 12);  // fewer than the 20 drawn
  QCOMPARE(timeline->spansShown(), 2 * 12 * 6);
  QCOMPARE(timeline->originUs(), t0);  // rank 1's times shifted onto rank 0's clock start 0.3 ms later
  QTableWidget* table = timeline->summaryTable();
  QCOMPARE(table->rowCount(), 2);
  QCOMPARE(table->verticalHeaderItem(0)->text(), QString("rank 0 · replica 0"));
  QCOMPARE(table->verticalHeaderItem(1)->text(), QString("rank 1 · replica 0"));
  QCOMPARE(table->item(1, 0)->text(), QString("10.000 ms"));
  // Rank 1 computes longer and waits less: the slower rank.
  QCOMPARE(timeline->slowestLaneOfStep(12), QString("rank 1 · replica 0"));
  QVERIFY2(timeline->hiddenCommText().startsWith("communication hidden behind compute: "),
           qPrintable(timeline->hiddenCommText()));

  // Hover rank 1's backward of step 12: 0.3 + 11*12 + 2.8 .. +5.6 ms from the origin.
  QCustomPlot* plot = timeline->plot();
  plot->replot();
  QCoreApplication::processEvents();
  const QPoint backward(int(std::lround(plot->xAxis->coordToPixel(0.3 + 11 * 12 + 2.8 + 2))),
                        int(std::lround(plot->yAxis->coordToPixel(2))));
  QTest::mouseMove(plot, backward);
  QTRY_VERIFY2(timeline->hoverText().startsWith("backward — rank 1 · replica 0"), qPrintable(timeline->hoverText()));
  QVERIFY2(timeline->hoverText().contains("step 12") && timeline->hoverText().contains("5.600 ms"),
           qPrintable(timeline->hoverText()));

  // Bad files: an error naming the file and why; the merged trace stays.
  const QString text = tmp_.filePath("notes.json"), partial = tmp_.filePath("cut.json.partial");
  write_file(text, "step 1 took 4 ms\n");
  QFile whole(merged);
  QVERIFY(whole.open(QIODevice::ReadOnly));
  write_file(partial, whole.readAll().left(2000));
  const std::vector<std::pair<QString, QString>> bad = {{text, "not valid JSON"},
                                                        {partial, "it is truncated"},
                                                        {tmp_.filePath("absent.json"), "cannot read"}};
  for (const auto& [file, reason] : bad) {
    win.presenter->open_path = file;
    const qsizetype before = win.presenter->errors.size();
    QTest::mouseClick(open, Qt::LeftButton);
    QTRY_COMPARE(win.presenter->errors.size(), before + 1);
    QVERIFY(!win.w.readingTrace());
    QCOMPARE(win.presenter->titles.last(), QString("Cannot open trace"));
    QVERIFY2(win.presenter->errors.last().contains(file) && win.presenter->errors.last().contains(reason),
             qPrintable(win.presenter->errors.last()));
    QCOMPARE(timeline->shownFile(), merged);
    QVERIFY2(timeline->sourceText().contains("mt-merged.json"), qPrintable(timeline->sourceText()));
    QCOMPARE(timeline->laneCount(), 4);
    QCOMPARE(int(timeline->stepsKept().size()), 12);
  }
  QCOMPARE(win.presenter->errors.size(), 3);
  // Cancelling the dialog changes nothing either.
  win.presenter->open_path.clear();
  QTest::mouseClick(open, Qt::LeftButton);
  QCOMPARE(win.presenter->errors.size(), 3);
  QCOMPARE(timeline->shownFile(), merged);

  // Live again: the (empty) live view, its hint.
  auto* live = timeline->findChild<QPushButton*>("liveTimelineButton");
  QVERIFY(live && live->isVisible());
  QTest::mouseClick(live, Qt::LeftButton);
  QVERIFY(!timeline->showingFile());
  QVERIFY(timeline->showingEmptyState());
}

// Trace files are read off the window's thread: while one is read the
// Timeline tab says so; asking for another meanwhile drops the first one's
// result (only the latest answer shows), and a long file arrives whole.
void DashboardTest::timelineReadsTracesOffTheWindowThread() {
  const QString big = tmp_.filePath("long-run.json"), bad = tmp_.filePath("not-a-trace.json");
  {
    trace::ChromeTraceWriter w(big.toStdString(), {"long run", 0, "node-a", 0});
    w.write(rank_steps(3000, 1'000'000.0, 1.0));
  }
  write_file(bad, "{\"traceEvents\": 3}");
  Window win;
  win.w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&win.w));
  TimelinePanel* timeline = show_timeline_tab(win);
  QVERIFY(timeline);

  win.w.openTrace(big);
  QVERIFY(win.w.readingTrace());
  QCOMPARE(timeline->sourceText(), QString("reading long-run.json…"));
  win.w.openTrace(bad);
  QTRY_COMPARE(win.presenter->errors.size(), qsizetype{1});
  QVERIFY2(win.presenter->errors.last().contains(bad), qPrintable(win.presenter->errors.last()));
  // The long file's read has ended by now too; its result was dropped.
  QThreadPool::globalInstance()->waitForDone();
  QCoreApplication::processEvents();
  QVERIFY(!win.w.readingTrace());
  QVERIFY(!timeline->showingFile());
  QCOMPARE(timeline->sourceText(), QString("live"));

  win.w.openTrace(big);
  QTRY_VERIFY(!win.w.readingTrace());
  QCOMPARE(win.presenter->errors.size(), qsizetype{1});
  QCOMPARE(timeline->shownFile(), big);
  QCOMPARE(timeline->fileStepCount(), 3000);
  QVERIFY2(timeline->sourceText().startsWith("long-run.json"), qPrintable(timeline->sourceText()));

  // A file cut at its size limit says so, and from which step.
  const QString cut = tmp_.filePath("cut-run.json");
  int64_t first_left_out = -1;
  {
    trace::ChromeTraceWriter w(cut.toStdString(), {"cut run", 0, "", 0}, 64 * 1024);
    w.write(rank_steps(3000, 1'000'000.0, 1.0));
    first_left_out = w.first_step_left_out();
  }
  QVERIFY(first_left_out > 0);
  win.w.openTrace(cut);
  QTRY_VERIFY(!win.w.readingTrace());
  QCOMPARE(timeline->shownFile(), cut);
  QVERIFY2(timeline->sourceText().contains(QString("cut at its size limit: ")) &&
               timeline->sourceText().contains(QString("left out, from step %1 on").arg(first_left_out)),
           qPrintable(timeline->sourceText()));
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

// The run table: names, tags and hyper-parameters of two runs made by
// strata-run, the newest overlaid on reopening, sorting by a column from
// its header, renaming and notes from the keyboard (kept in run.json), and
// the two runs' settings compared with the differences marked.
void DashboardTest::runTableNotesAndComparison() {
  QTemporaryDir dir;
  const QString proj = dir.filePath("table.strata");
  QVERIFY(QFile::copy(STRATA_SOURCE_DIR "/resources/examples/tiny-synthetic.strata", proj));
  QFile::setPermissions(proj, QFile::ReadOwner | QFile::WriteOwner);
  const auto strata_run = [&](const QStringList& args) {
    QProcess p;
    p.start(STRATA_BINARY_DIR "/app/strata-run", QStringList{proj, "--events", "jsonl"} + args);
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
  };
  strata_run({"--epochs", "2", "--run-name", "baseline", "--tags", "a, b"});
  QTest::qWait(1100);  // run folders are named by the second
  strata_run({"--epochs", "3", "--batch-size", "40", "--learning-rate", "0.05"});

  Window win;
  win.w.resize(1400, 900);
  win.w.show();
  win.w.activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(&win.w));
  QVERIFY(win.w.openProject(proj));
  RunHistoryPanel* history = win.w.historyPanel();
  QCOMPARE(history->runCount(), 2);
  QTableWidget* table = history->table();
  // Newest first; it is overlaid on the charts again.
  const QString newest = history->runDir(0), older = history->runDir(1);
  QVERIFY(QFileInfo(newest).fileName() > QFileInfo(older).fileName());
  QVERIFY(win.w.charts()->lossChart()->seriesIndex(QFileInfo(newest).fileName() + " · loss") >= 0);
  QCOMPARE(table->item(1, RunHistoryPanel::Name)->text(), QString("baseline"));
  QCOMPARE(table->item(1, RunHistoryPanel::Tags)->text(), QString("a, b"));
  QCOMPARE(table->item(0, RunHistoryPanel::Name)->text(), QFileInfo(newest).fileName());
  QCOMPARE(table->item(0, RunHistoryPanel::Batch)->text(), QString("40"));
  QCOMPARE(table->item(0, RunHistoryPanel::LearningRate)->text(), QString("0.05"));
  QCOMPARE(table->item(0, RunHistoryPanel::Epochs)->text(), QString("3"));
  QCOMPARE(table->item(1, RunHistoryPanel::Status)->text(), QString("completed"));

  // Sorted by Batch from its header (ascending, then descending).
  // The Runs tab, below the charts (a tab widget's page sits in its stack).
  auto* tabs = qobject_cast<QTabWidget*>(history->parentWidget()->parentWidget());
  QVERIFY(tabs);
  tabs->setCurrentWidget(history);
  QTRY_VERIFY(table->isVisible());
  QHeaderView* header = table->horizontalHeader();
  const QPoint batch_header(header->sectionViewportPosition(RunHistoryPanel::Batch) + header->sectionSize(RunHistoryPanel::Batch) / 2,
                            header->height() / 2);
  QTest::mouseClick(header->viewport(), Qt::LeftButton, Qt::NoModifier, batch_header);
  const bool ascending = header->sortIndicatorOrder() == Qt::AscendingOrder;
  QCOMPARE(history->runDir(0), ascending ? newest : older);  // batch 40 before 50 when ascending
  QTest::mouseClick(header->viewport(), Qt::LeftButton, Qt::NoModifier, batch_header);
  QCOMPARE(history->runDir(0), ascending ? older : newest);

  // Rename the batch-40 run from the keyboard (F2, type, Enter).
  const int row40 = history->runDir(0) == newest ? 0 : 1;
  QTableWidgetItem* name = table->item(row40, RunHistoryPanel::Name);
  QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::NoModifier, table->visualItemRect(name).center());
  QCOMPARE(history->currentRunDir(), newest);
  QTest::keyClick(table->viewport(), Qt::Key_F2);
  QTRY_VERIFY(QApplication::focusWidget() && qobject_cast<QLineEdit*>(QApplication::focusWidget()));
  QWidget* editor = QApplication::focusWidget();
  QTest::keyClick(editor, Qt::Key_A, Qt::ControlModifier);
  QTest::keyClicks(editor, "wider batch");
  QTest::keyClick(editor, Qt::Key_Return);
  QTRY_COMPARE(QString::fromStdString(read_run_notes(newest.toStdString()).name), QString("wider batch"));
  // Overlaid again, it is named in the legends.
  history->setOverlay(row40, false);
  history->setOverlay(row40, true);
  QVERIFY(win.w.charts()->lossChart()->seriesIndex("wider batch · loss") >= 0);

  // Notes, typed, saved when the focus moves on.
  QPlainTextEdit* notes = history->notesEdit();
  QTest::mouseClick(notes->viewport(), Qt::LeftButton, Qt::NoModifier, QPoint(10, 10));
  QTest::keyClicks(notes, "lr 0.05 learns faster");
  QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::NoModifier,
                    table->visualItemRect(table->item(1 - row40, RunHistoryPanel::Status)).center());
  QTRY_COMPARE(QString::fromStdString(read_run_notes(newest.toStdString()).notes), QString("lr 0.05 learns faster"));
  QCOMPARE(history->currentRunDir(), older);
  QCOMPARE(notes->toPlainText(), QString());  // the other run's (none)

  // Both selected (Ctrl+click): their settings side by side.
  QVERIFY(!history->compareButton()->isEnabled());
  QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::ControlModifier,
                    table->visualItemRect(table->item(row40, RunHistoryPanel::Status)).center());
  QVERIFY(history->compareButton()->isEnabled());
  QTest::mouseClick(history->compareButton(), Qt::LeftButton);
  SettingsDiffDialog* diff = history->comparison();
  QVERIFY(diff && diff->isVisible());
  QCOMPARE(diff->differenceCount(), 3);  // epochs, batch size, learning rate
  QList<QString> said;
  for (const QLabel* l : diff->findChildren<QLabel*>()) said << l->text();
  QVERIFY2(said.contains("3 settings differ, marked in bold."), qPrintable(said.join(" | ")));
  QCOMPARE(diff->table()->rowCount(), 3);  // only the differences shown
  QStringList paths;
  for (int r = 0; r < 3; ++r) {
    paths << diff->table()->item(r, 0)->text();
    QVERIFY(diff->table()->item(r, 1)->font().bold());
  }
  QCOMPARE(paths, QStringList({"training.batch_size", "training.epochs", "training.optimizer.learning_rate"}));
  QTest::mouseClick(diff->onlyDifferencesBox(), Qt::LeftButton, Qt::NoModifier, QPoint(8, diff->onlyDifferencesBox()->height() / 2));
  QVERIFY(diff->table()->rowCount() > 10);  // every setting
  save_screenshot(&win.w, "runs-table.png");
  QTest::mouseClick(diff->onlyDifferencesBox(), Qt::LeftButton, Qt::NoModifier, QPoint(8, diff->onlyDifferencesBox()->height() / 2));
  save_screenshot(diff, "settings-diff.png");
  diff->close();

  // Reopened: the name, tags and notes are still there.
  Window again;
  QVERIFY(again.w.openProject(proj));
  bool found = false;
  for (int r = 0; r < again.w.historyPanel()->runCount(); ++r)
    found |= again.w.historyPanel()->table()->item(r, RunHistoryPanel::Name)->text() == "wider batch";
  QVERIFY(found);
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
  // The engine logs "paused" once the step in flight has finished; the
  // events before it reach the window before it does. Then nothing more.
  QTRY_VERIFY_WITH_TIMEOUT(win.w.logPanel()->toPlainText().contains("paused"), 60000);
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
  QVERIFY(live.finished && live.finished->status == RunStatus::Stopped);
  QVERIFY(win.presenter->errors.isEmpty());
  QVERIFY(!win.editor()->locked());
  // Stop works from a paused run too.
  win.w.startRun();
  QTRY_VERIFY_WITH_TIMEOUT(live.step.size() > 2, 60000);
  win.w.pauseRun();
  win.w.stopRun();
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 60000);
  QVERIFY(live.finished && live.finished->status == RunStatus::Stopped);
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

// The schedule and callbacks set through the Schedule tab's widgets with the
// mouse and keyboard: saved, reopened, and a run that early stopping ends,
// its best epoch marked on the accuracy chart.
void DashboardTest::scheduleAndEarlyStopping() {
  const QString path = tmp_.filePath("schedule.strata");
  {
    Window win;
    QVERIFY(win.w.openProject(project_));
    win.w.show();
    win.w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&win.w));
    SchedulePanel* panel = win.editor()->schedulePanel();
    win.editor()->setCurrentIndex(win.editor()->indexOf(panel->parentWidget()->parentWidget()));
    QTRY_VERIFY(panel->isVisible());
    // Schedule: Cosine decay, from the keyboard; its rows, and only its, show.
    QComboBox* type = panel->scheduleBox();
    type->setFocus();
    for (int i = 0; i < 3; ++i) QTest::keyClick(type, Qt::Key_Down);
    QCOMPARE(type->currentData().toString(), QString("cosine"));
    QTRY_VERIFY(panel->findChild<QLineEdit*>("cosineMinLr")->isVisible());
    QVERIFY(!panel->findChild<QSpinBox*>("stepEvery")->isVisible());
    auto type_in = [](QWidget* w, const QString& text) {
      QTest::mouseClick(w, Qt::LeftButton, Qt::NoModifier, QPoint(w->width() / 3, w->height() / 2));
      QTest::keyClick(w, Qt::Key_A, Qt::ControlModifier);
      QTest::keyClicks(w, text);
      QTest::keyClick(w, Qt::Key_Tab);
    };
    type_in(panel->findChild<QLineEdit*>("cosineMinLr"), "0.0001");
    type_in(panel->findChild<QDoubleSpinBox*>("warmupEpochs"), "1");
    // Early stopping: the group's check box in its title, clicked.
    QGroupBox* early = panel->earlyStoppingGroup();
    QVERIFY(!early->isChecked());
    QVERIFY(!panel->findChild<QSpinBox*>("earlyStoppingPatience")->isEnabled());
    QTest::mouseClick(early, Qt::LeftButton, Qt::NoModifier, QPoint(10, early->fontMetrics().height() / 2 + 1));
    QVERIFY(early->isChecked());
    type_in(panel->findChild<QSpinBox*>("earlyStoppingPatience"), "1");
    type_in(panel->findChild<QLineEdit*>("earlyStoppingMinDelta"), "5");  // no epoch gains that much
    type_in(panel->findChild<QSpinBox*>("checkpointKeep"), "2");
    QVERIFY(win.w.isModified());
    win.editor()->trainingPanel()->epochsBox()->setValue(10);
    QVERIFY(win.w.saveProjectAs(path));
    save_screenshot(win.editor(), "schedule-tab.png");
  }
  Window win;
  QVERIFY(win.w.openProject(path));
  const TrainingConfig t = win.w.currentConfig().training;
  QCOMPARE(QString::fromStdString(t.lr_schedule.type), QString("cosine"));
  QCOMPARE(t.lr_schedule.min_lr, 0.0001);
  QCOMPARE(t.lr_schedule.warmup_epochs, 1.0);
  QVERIFY(t.early_stopping.enabled);
  QCOMPARE(QString::fromStdString(t.early_stopping.monitor), QString("val_loss"));
  QCOMPARE(t.early_stopping.patience, 1);
  QCOMPARE(t.early_stopping.min_delta, 5.0);
  QCOMPARE(t.checkpoint.keep, 2);
  QVERIFY(!t.reduce_lr_on_plateau.enabled);

  win.w.startRun();
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 120000);
  QVERIFY2(win.presenter->errors.isEmpty(), qPrintable(win.presenter->errors.join("\n")));
  // Epoch 1 sets the best val_loss, epoch 2 does not beat it by 5: stopped.
  const QString status = win.w.statusPanel()->statusText();
  QVERIFY2(status.startsWith("Completed 2 epochs") && status.contains("stopped early after epoch 2: val_loss has not improved for 1 epoch"),
           qPrintable(status));
  QCOMPARE(win.w.statusPanel()->progressValue(), 2 * 16);  // the bar stays where the run ended
  ChartView* accuracy = win.w.charts()->accuracyChart();
  QCOMPARE(accuracy->markerCount(), 1);
  QVERIFY2(accuracy->markerText(0).startsWith("best: epoch "), qPrintable(accuracy->markerText(0)));
}

void DashboardTest::askBeforeDiscarding() {
  Window win;
  QVERIFY(win.w.openProject(project_));
  // The project's name is a field (typed, as a person does); the title follows.
  QLineEdit* name = win.editor()->trainingPanel()->nameEdit();
  name->selectAll();
  QTest::keyClicks(name, "Renamed run");
  QCOMPARE(QString::fromStdString(win.w.currentConfig().name), QString("Renamed run"));
  QVERIFY2(win.w.windowTitle().startsWith("Renamed run"), qPrintable(win.w.windowTitle()));
  QVERIFY(win.w.isModified());
  win.editor()->trainingPanel()->epochsBox()->setValue(9);
  QVERIFY(win.w.isModified());
  // A 64-bit seed survives the panel (a spin box once cut it to 31 bits).
  QLineEdit* seed = win.editor()->trainingPanel()->seedEdit();
  seed->selectAll();
  QTest::keyClicks(seed, "123456789012");
  QCOMPARE(win.w.currentConfig().training.seed, uint64_t{123456789012});
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
  // With unsaved changes: a file that is no project asks nothing about
  // saving, and says what is wrong without the JSON library's tags.
  win.editor()->trainingPanel()->epochsBox()->setValue(9);
  QVERIFY(win.w.isModified());
  const int asked = win.presenter->asked;
  QVERIFY(!win.w.openProject(junk.fileName()));
  QCOMPARE(win.presenter->asked, asked);
  QVERIFY2(win.presenter->errors.last().contains("not a Strata project") && !win.presenter->errors.last().contains("[json."),
           qPrintable(win.presenter->errors.last()));
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
  f.status = RunStatus::Failed;
  f.failure = FailureKind::Diverged;  // as the engine reports it
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
  // The marker sits where the loss became NaN, inside the visible range.
  QVERIFY(loss->plot()->xAxis->range().contains(4));
}

// A run the device's memory cannot hold ends with a dialog that says so (the
// engine's message names the device and the remedy), not a generic failure.
// The engine's side is test_strata_run's out_of_device_memory_exit_1, on a
// simulated device with 1 GiB; as in divergenceIsMarked, the events are
// replayed through the bridge's signal.
void DashboardTest::outOfDeviceMemoryIsNamed() {
  Window win;
  QVERIFY(win.w.openProject(project_));
  RunStartedEvent started;
  started.strategy = "one_device";
  started.replicas = 1;
  started.devices = {"gpu:0"};
  started.steps_per_epoch = 10;
  started.epochs = 1;
  FinishedEvent f;
  f.status = RunStatus::Failed;
  f.failure = FailureKind::OutOfDeviceMemory;
  f.message =
      "gpu:0 (NVIDIA H200): out of device memory allocating 2048 MiB (100 MiB free of 143 GiB; this process holds "
      "140 GiB). Use a smaller batch or model, or fewer replicas on this GPU";
  Q_EMIT win.w.runController()->bridge()->events({started, LogEvent{"error", f.message, 0.1}, f});
  QCOMPARE(win.presenter->titles.value(0), QString("Out of device memory"));
  QVERIFY(win.presenter->errors.value(0).contains("smaller batch"));
  QVERIFY(win.w.statusPanel()->statusText().startsWith("Failed"));
  QVERIFY(!win.editor()->locked());
}

// Counts read as English ("1 worker process", "3 epochs", never "(es)"),
// a finished run's bar drops its ETA, and Help (F1) points at the guide.
void DashboardTest::wordingAndHelp() {
  Window win;
  QVERIFY(win.w.openProject(project_));
  std::vector<Event> batch = mirrored_run(3, 4, [](int i) { return 1.0 / i; });
  EpochEvent best;  // the best epoch's marker, for the small window below
  best.epoch = 2;
  best.time = 0.8;
  best.val_accuracy = 0.8616;
  best.best = true;
  batch.push_back(best);
  FinishedEvent f;
  f.status = RunStatus::Completed;
  f.message = "completed 3 epochs";
  f.epochs_completed = 3;
  f.steps = 12;
  f.time = 1.2;
  batch.push_back(f);
  Q_EMIT win.w.runController()->bridge()->events(batch);
  StatusPanel* status = win.w.statusPanel();
  QTRY_VERIFY(status->statusText().startsWith("Completed"));
  QVERIFY2(status->statusText().startsWith("Completed 3 epochs (12 steps"), qPrintable(status->statusText()));
  QVERIFY2(status->workersText().startsWith("1 worker process"), qPrintable(status->workersText()));
  for (const QString& text : {status->statusText(), status->workersText(), status->progressText()})
    QVERIFY2(!text.contains("(s)") && !text.contains("(es)"), qPrintable(text));
  QVERIFY2(!status->progressText().contains("ETA"), qPrintable(status->progressText()));
  QVERIFY2(status->progressText().contains("epoch 3/3") && status->progressText().contains("step 12/12"),
           qPrintable(status->progressText()));
  for (auto* label : win.w.findChildren<QLabel*>())
    QVERIFY2(!label->text().contains("replica(s)") && !label->text().contains("(es)"), qPrintable(label->text()));

  // A fast run's figures do not widen the status panel (its lines wrap): an
  // unwrapped speed line made the panel as wide as its text, and where the
  // window could not give that, cut it off ("elapsed 00:0").
  const int narrow = win.w.statusPanel()->minimumSizeHint().width();
  StepEvent fast;
  fast.step = fast.epoch_step = 11;
  fast.epoch = 3;
  fast.time = 61.5;
  fast.loss = 0.30495123;
  fast.lr = 0.00123;
  fast.samples_per_sec = 1234567.0;
  win.w.statusPanel()->onStep(fast);
  QVERIFY2(
      win.w.statusPanel()->minimumSizeHint().width() <= narrow,
      qPrintable(
          QString("%1 px wide with the figures, %2 before").arg(win.w.statusPanel()->minimumSizeHint().width()).arg(narrow)));

  // The charts side by side stay level in a small window, where the
  // accuracy chart's legend wraps onto a second row: their plots start at
  // one height (the accuracy plot was shorter than its neighbours).
  win.w.resize(1200, 800);
  win.w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&win.w));
  const ChartsPanel* charts = win.w.charts();
  for (int round = 0; round < 2; ++round) {  // a neighbour's legend may ask for one more (queued) replot
    for (ChartView* c : {charts->accuracyChart(), charts->throughputChart(), charts->workerChart()}) c->plot()->replot();
    QApplication::processEvents();
  }
  QVERIFY2(charts->accuracyChart()->plot()->legend->rowCount() > charts->throughputChart()->plot()->legend->rowCount(),
           "the accuracy legend does not wrap here: the check below would prove nothing");
  const int top = charts->accuracyChart()->plot()->axisRect()->top();
  QCOMPARE(charts->throughputChart()->plot()->axisRect()->top(), top);
  QCOMPARE(charts->workerChart()->plot()->axisRect()->top(), top);
  // The best epoch's label stays whole inside that short plot (it ran over the x axis).
  QCustomPlot* accuracy = charts->accuracyChart()->plot();
  int labels = 0;
  for (int i = 0; i < accuracy->itemCount(); ++i)
    if (auto* label = qobject_cast<QCPItemText*>(accuracy->item(i)); label && label->text().startsWith("best")) {
      ++labels;
      QVERIFY2(label->bottom->pixelPosition().y() <= accuracy->axisRect()->bottom() + 1,
               qPrintable(QString("the label ends at %1, the plot at %2")
                              .arg(label->bottom->pixelPosition().y())
                              .arg(accuracy->axisRect()->bottom())));
    }
  QCOMPARE(labels, 1);

  auto* docs = win.w.findChild<QAction*>("documentationAction");
  QVERIFY(docs);
  QCOMPARE(docs->shortcut(), QKeySequence(QKeySequence::HelpContents));
  QVERIFY2(docs->statusTip().endsWith("dashboard.md") && QFileInfo::exists(docs->statusTip()), qPrintable(docs->statusTip()));
}

// The dataset tab never shows what the settings no longer say: the preview
// of the old source goes when the source changes, and the Fashion-MNIST
// "found" line follows the folder as it is typed.
void DashboardTest::datasetPreviewNeverStale() {
  Window win;
  QVERIFY(win.w.openProject(project_));
  DatasetPanel* data = win.editor()->datasetPanel();
  QTRY_COMPARE_WITH_TIMEOUT(data->previewRows(), qint64(800), 30000);
  auto* info = data->findChild<QLabel*>("previewInfo");
  QVERIFY(info && info->text().contains("800 training rows"));
  // The class balance is shown with a preview only (empty axes would say "no examples").
  auto* balance = data->findChild<QCustomPlot*>("classBalance");
  QVERIFY(balance && !balance->isHidden());
  // One tick per class, labelled with the class (no class 2.5).
  balance->replot();
  const QVector<QString> classes = balance->xAxis->tickVectorLabels();
  QVERIFY2(!classes.isEmpty(), "no class ticks");
  for (int c = 0; c < classes.size(); ++c) QCOMPARE(classes[c], QString::number(c));
  QComboBox* kind = data->kindBox();
  kind->setCurrentIndex(kind->findData("fashion_mnist"));
  QCOMPARE(data->previewRows(), qint64(-1));
  QVERIFY(balance->isHidden());
  QVERIFY2(!info->text().contains("800 training rows") && info->text().contains("changed"), qPrintable(info->text()));
  auto* folder = data->findChild<QLineEdit*>("fashionFolder");
  auto* status = data->findChild<QLabel*>("fashionStatus");
  QVERIFY(folder && status);
  folder->setFocus();
  QTest::keyClicks(folder, "/nowhere/fashion");
  QVERIFY2(status->text().contains("Not found in /nowhere/fashion"), qPrintable(status->text()));
  // A load started before a change is not shown after it.
  kind->setCurrentIndex(kind->findData("synthetic"));
  data->refreshPreview();
  auto* examples = data->findChild<QSpinBox*>("syntheticExamples");
  examples->setValue(500);
  // The stale load runs to its end, and is not shown. Its future reads as
  // finished just before the watcher's finished signal is posted: 20 ms of
  // event processing deliver that signal, which is what would show it.
  QTRY_VERIFY_WITH_TIMEOUT(!data->previewBusy(), 30000);
  QTest::qWait(20);
  QCOMPARE(data->previewRows(), qint64(-1));
  QVERIFY(balance->isHidden());
  data->refreshPreview();
  QTRY_COMPARE_WITH_TIMEOUT(data->previewRows(), qint64(400), 30000);
  QVERIFY(!balance->isHidden());
}

// New (Ctrl+N, from the keyboard) and Open leave nothing of the previous
// run: no series, no markers, no readout, axes back to their empty range,
// an empty log.
void DashboardTest::newAndOpenStartClean() {
  Window win;
  win.w.show();
  win.w.activateWindow();  // what a window manager does; a bare X server does not
  QVERIFY(QTest::qWaitForWindowActive(&win.w));
  for (const bool by_keyboard : {true, false}) {
    QVERIFY(win.w.openProject(project_));
    std::vector<Event> batch = mirrored_run(1, 10, [](int i) { return 1000.0 + i; });
    batch.push_back(LogEvent{"info", "a line of the old run", 0.5});
    Q_EMIT win.w.runController()->bridge()->events(batch);
    ChartView* loss = win.w.charts()->lossChart();
    QTRY_VERIFY(loss->pointCount(loss->seriesIndex("loss (reduced)")) == 10);
    loss->addMarker(XPoint{7, 0, 0}, "old marker");
    QVERIFY(loss->plot()->yAxis->range().contains(1005));
    QTest::mouseMove(loss->plot(), loss->plot()->axisRect()->rect().center());
    QTRY_VERIFY(loss->readoutVisible());
    QVERIFY(win.w.logPanel()->toPlainText().contains("a line of the old run"));
    if (by_keyboard) QTest::keyClick(&win.w, Qt::Key_N, Qt::ControlModifier);
    else QVERIFY(win.w.openProject(project_));
    for (ChartView* chart : win.w.charts()->charts()) {
      QCOMPARE(chart->seriesCount(), 0);
      QCOMPARE(chart->markerCount(), 0);
      QVERIFY(!chart->readoutVisible());
      QCOMPARE(chart->plot()->yAxis->range(), QCPRange(0, 1));
      QCOMPARE(chart->plot()->xAxis->range(), QCPRange(0, 1));
    }
    QVERIFY2(win.w.logPanel()->toPlainText().isEmpty(), qPrintable(win.w.logPanel()->toPlainText()));
  }
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
  QVERIFY(live.finished && live.finished->status == RunStatus::Stopped);
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
  QVERIFY(live.finished && live.finished->status == RunStatus::Stopped);
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
  // Rows and columns numbered alike: row "1 · <name>", column "1" (its tooltip names the class).
  const QString name1 = QString::fromStdString(view->result()->class_names[1]);
  QCOMPARE(table->verticalHeaderItem(1)->text(), "1 · " + name1);
  QCOMPARE(table->horizontalHeaderItem(1)->text(), QString("1"));
  QVERIFY(table->horizontalHeaderItem(1)->toolTip().contains(name1));
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
  // The status says it is done, not "Exporting to …" for ever.
  QVERIFY2(!view->summaryText().contains("Exporting") && view->summaryText().contains("Weights exported to"),
           qPrintable(view->summaryText()));
  const SafeTensorsFile file = read_safetensors(out.toStdString());
  int64_t params = 0;
  for (const auto& [name, t] : file.tensors) params += t.numel();
  QCOMPARE(params, int64_t(16 * 32 + 32 + 32 * 4 + 4));
  // The window closes from the keyboard like any document window.
  view->activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(view));
  QTest::keyClick(view, Qt::Key_W, Qt::ControlModifier);
  QTRY_VERIFY(!view->isVisible());
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
  QVERIFY(win.w.runController()->acrossProcesses());
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

void DashboardTest::stopAcrossProcessesGracefully(Window& win) {
  win.w.startRun();
  const RunSeries& live = win.w.charts()->liveRun();
  QTRY_VERIFY_WITH_TIMEOUT(live.step.size() > 20, 60000);
  win.w.stopRun();
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 60000);
  QVERIFY2(live.finished && live.finished->status == RunStatus::Stopped, qPrintable(win.w.logPanel()->toPlainText().right(2000)));
  QVERIFY2(win.w.statusPanel()->statusText().startsWith("Stopped"), qPrintable(win.w.statusPanel()->statusText()));
  // Gracefully: the ranks checkpointed the last step, so the run can resume.
  const QString run_dir = win.w.runController()->lastRunDir();
  QVERIFY(QFile::exists(run_dir + "/checkpoints/ckpt-" + QString::number(qint64(live.step.back())) + "/state.json"));
}

void DashboardTest::multiWorkerStop() {
  if (!mpi_built() || find_mpirun().isEmpty()) QSKIP("needs an MPI build and mpirun");
  Window win;
  configureMultiWorker(win, copyProject("multi-stop.strata"), 100000);
  stopAcrossProcessesGracefully(win);
  if (QTest::currentTestFailed()) return;
  QVERIFY(win.w.historyPanel()->canResume(0));
}

void DashboardTest::configureParameterServer(Window& win, const QString& project, int epochs, int servers, int bound) {
  QVERIFY(win.w.openProject(project));
  StrategyPanel* panel = win.editor()->strategyPanel();
  ParameterServerSettings* settings = panel->parameterServerSettings();
  auto* ps = win.w.findChild<QRadioButton*>("strategy_parameter_server");
  QVERIFY(ps && ps->isEnabled());
  QTest::mouseClick(ps, Qt::LeftButton, Qt::NoModifier, QPoint(8, ps->height() / 2));
  QVERIFY(ps->isChecked());
  QVERIFY(win.w.isModified());
  QVERIFY(settings->isVisibleTo(panel));
  QVERIFY(!panel->multiWorkerPanel()->isVisibleTo(panel));
  // The widgets the tests drive are the ones a user sees, found by name.
  QCOMPARE(win.w.findChild<QSpinBox*>("psServers"), settings->serversBox());
  QCOMPARE(win.w.findChild<QCheckBox*>("psStalenessUnbounded"), settings->unboundedBox());
  QCOMPARE(win.w.findChild<QSpinBox*>("psStaleness"), settings->stalenessBox());
  QCOMPARE(win.w.findChild<QSpinBox*>("psMinShardBytes"), settings->minShardBytesBox());
  QVERIFY(settings->stalenessBox()->toolTip().contains("0 = synchronous"));
  settings->serversBox()->setValue(servers);
  settings->unboundedBox()->setChecked(bound < 0);
  QCOMPARE(settings->stalenessBox()->isEnabled(), bound >= 0);
  if (bound >= 0) settings->stalenessBox()->setValue(bound);
  auto* devices = win.w.findChild<QListWidget*>("deviceList");
  check_device(devices, "cpu:0", true);
  check_device(devices, "cpu:1", true);
  QCOMPARE(win.editor()->devicesPanel()->selectedDevices(), QStringList({"cpu:0", "cpu:1"}));
  win.editor()->trainingPanel()->epochsBox()->setValue(epochs);
  win.editor()->trainingPanel()->batchBox()->setValue(50);
  QVERIFY2(win.editor()->devicesPanel()->summary().startsWith("2 worker"), qPrintable(win.editor()->devicesPanel()->summary()));
  const RunConfig c = win.w.currentConfig();
  QCOMPARE(QString::fromStdString(c.strategy.name), QString("parameter_server"));
  QCOMPARE(c.strategy.servers, servers);
  QCOMPARE(c.strategy.staleness, bound < 0 ? -1 : bound);
  QCOMPARE(c.strategy.devices, (std::vector<std::string>{"cpu:0", "cpu:1"}));
}

void DashboardTest::parameterServerRunFillsCharts() {
  Window win;
  // Long enough (a few tenths of a second here) for the servers' update
  // rates, measured over at least 50 ms, to show.
  const int epochs = 40;
  configureParameterServer(win, copyProject("ps.strata"), epochs, 2, 2);
  QVERIFY(win.w.saveProject());
  win.w.startRun();
  QVERIFY(win.w.runController()->running());
  // Locked like every other setting while the run goes.
  QVERIFY(!win.editor()->strategyPanel()->parameterServerSettings()->serversBox()->isEnabled());
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 120000);
  QVERIFY(win.editor()->strategyPanel()->parameterServerSettings()->serversBox()->isEnabled());
  QVERIFY2(win.presenter->errors.isEmpty(), qPrintable(win.presenter->errors.join("\n")));
  QVERIFY2(win.w.statusPanel()->statusText().startsWith("Completed"),
           qPrintable(win.w.statusPanel()->statusText() + "\n" + win.w.logPanel()->toPlainText()));

  const int steps = epochs * 16;  // 800 training examples, global batch 50
  ChartsPanel* charts = win.w.charts();
  const RunSeries& live = charts->liveRun();
  QVERIFY(live.started);
  QCOMPARE(QString::fromStdString(live.started->strategy), QString("parameter_server"));
  QCOMPARE(live.started->replicas, 2);
  QCOMPARE(live.started->servers, 2);
  QCOMPARE(live.started->staleness_bound, std::optional<int>(2));
  QCOMPARE(int(live.step.size()), steps);
  QVERIFY(charts->parameterServerCharts()->isVisibleTo(charts));
  QVERIFY2(win.w.statusPanel()->workersText().contains("2 parameter servers, staleness ≤ 2"),
           qPrintable(win.w.statusPanel()->workersText()));

  // Staleness: one point a step, never above the bound, the bound drawn beside.
  ChartView* staleness = charts->stalenessChart();
  const int st = staleness->seriesIndex("staleness");
  QVERIFY(st >= 0);
  QCOMPARE(staleness->pointCount(st), steps);
  for (double v : staleness->seriesValues(st)) QVERIFY2(v >= 0 && v <= 2, qPrintable(QString::number(v)));
  QCOMPARE(staleness->seriesValues(st), live.staleness);
  const int bound = staleness->seriesIndex("bound (k = 2)");
  QVERIFY(bound >= 0);
  QCOMPARE(staleness->seriesStyle(bound).pen, Qt::DashLine);
  QCOMPARE(staleness->pointCount(bound), steps);
  QVERIFY(std::all_of(staleness->seriesValues(bound).begin(), staleness->seriesValues(bound).end(), [](double v) { return v == 2; }));

  // Server updates: one series per server, a point a step, the events' rates.
  ChartView* servers = charts->serverUpdatesChart();
  QCOMPARE(servers->seriesCount(), 2);
  QCOMPARE(live.server_updates.size(), size_t(2));
  double fastest = 0;
  for (int k = 0; k < 2; ++k) {
    const int i = servers->seriesIndex(QString("server %1").arg(k));
    QVERIFY(i >= 0);
    QCOMPARE(servers->pointCount(i), steps);
    QCOMPARE(servers->seriesValues(i), live.server_updates[size_t(k)]);
    for (double v : servers->seriesValues(i)) QVERIFY(std::isfinite(v) && v >= 0);
    fastest = std::max(fastest, *std::max_element(servers->seriesValues(i).begin(), servers->seriesValues(i).end()));
  }
  qInfo("parameter-server run: %.3f s, fastest server %.0f updates/s", live.time.back(), fastest);
  // Rates are measured over at least 50 ms, so a run that long has one.
  if (live.time.back() > 0.1) QVERIFY(fastest > 0);

  // Loss: a series per worker (named so) plus the reduced loss. A worker's
  // line starts at its first reported loss (the engine says 0 before).
  ChartView* loss = charts->lossChart();
  QCOMPARE(loss->seriesIndex("replica 0"), -1);
  QCOMPARE(loss->pointCount(loss->seriesIndex("loss (reduced)")), steps);
  int64_t slices = 0;
  for (int w = 0; w < 2; ++w) {
    const int i = loss->seriesIndex(ParameterServerCharts::workerSeriesName(size_t(w)));
    QVERIFY(i >= 0);
    const auto& col = live.replica_loss[size_t(w)];
    const auto first = std::find_if(col.begin(), col.end(), [](double v) { return v != 0.0; });
    QVERIFY(first != col.end());
    QCOMPARE(loss->pointCount(i), int(col.end() - first));
    QCOMPARE(loss->seriesValues(i).back(), col.back());
    // The legend counts the worker's finished slices.
    const int64_t n = live.worker_steps[size_t(w)];
    QVERIFY(n > 0);
    slices += n;
    QCOMPARE(loss->seriesLabel(i), QString("worker %1 — %2 steps").arg(w).arg(n));
  }
  QCOMPARE(slices, int64_t(2) * steps);  // every round: two slices of 25, none redone
  QCOMPARE(loss->markerCount(), 0);
  QCOMPARE(live.lost_worker_count(), 0);
  QCOMPARE(win.w.historyPanel()->runCount(), 1);
  const auto runs = list_runs(win.w.projectPath().toStdString());
  QVERIFY2(QString::fromStdString(runs.at(0).summary).startsWith("parameter_server x2 · 2 servers · completed"),
           runs.at(0).summary.c_str());
}

void DashboardTest::lostWorkerIsMarked() {
  // A lost worker needs an injected fault (a bench/demo option the panels do
  // not offer), so the engine's event sequence is replayed through the
  // bridge's signal, as in divergenceIsMarked; then once more after a round
  // trip through JSON Lines, the form a run folder stores.
  for (const bool via_jsonl : {false, true}) {
    Window win;
    QVERIFY(win.w.openProject(project_));
    RunStartedEvent started;
    started.strategy = "parameter_server";
    started.replicas = 2;
    started.devices = {"cpu:0", "cpu:1"};
    started.steps_per_epoch = 10;
    started.epochs = 1;
    started.servers = 2;
    started.staleness_bound = 1;
    started.shards = "server 0: dense/kernel; server 1: dense/bias";
    std::vector<Event> batch{started};
    for (int i = 1; i <= 6; ++i) {
      StepEvent s;
      s.step = s.epoch_step = i;
      s.epoch = 1;
      s.time = 0.1 * i;
      s.replica_losses = {1.0 / i, 1.2 / i};
      s.loss = 1.1 / i;
      s.staleness = i % 2;
      s.worker_steps = {i, std::min(i, 3)};
      s.server_updates_per_sec = {100.0 * i, 90.0 * i};
      s.worker_step_times = {0.01, 0.02};
      if (i == 1) s.replica_losses[1] = 0.0, s.worker_steps[1] = 0;  // worker 1 has not finished a slice
      if (i >= 4) s.lost_workers = {1};
      if (i == 4) batch.push_back(LogEvent{"warning", "worker 1 (cpu:1) lost: worker 1 failed (injected at its step 4)", 0.35});
      batch.push_back(s);
    }
    if (via_jsonl)
      for (auto& e : batch) e = event_from_jsonl(event_to_jsonl(e));
    Q_EMIT win.w.runController()->bridge()->events(batch);

    ChartsPanel* charts = win.w.charts();
    QVERIFY(charts->parameterServerCharts()->isVisibleTo(charts));
    ChartView* loss = charts->lossChart();
    const int w0 = loss->seriesIndex("worker 0"), w1 = loss->seriesIndex("worker 1");
    QVERIFY(w0 >= 0 && w1 >= 0);
    QCOMPARE(loss->seriesLabel(w0), QString("worker 0 — 6 steps"));
    QCOMPARE(loss->seriesLabel(w1), QString("worker 1 (lost) — 3 steps"));
    QVERIFY(charts->parameterServerCharts()->workerLost(1));
    QVERIFY(!charts->parameterServerCharts()->workerLost(0));
    // Greyed and dashed; the live worker keeps its colour and solid line.
    QCOMPARE(loss->seriesStyle(w1).pen, Qt::DashLine);
    QCOMPARE(loss->seriesStyle(w1).color, QColor(150, 150, 150));
    QCOMPARE(loss->seriesStyle(w0).pen, Qt::SolidLine);
    QCOMPARE(loss->seriesStyle(w0).color, QColor(31, 119, 180));
    // Worker 1's line: steps 2 and 3 only (no loss at step 1, lost from 4).
    QCOMPARE(loss->pointCount(w0), 6);
    QCOMPARE(loss->pointCount(w1), 2);
    QCOMPARE(loss->seriesValues(w1), (std::vector<double>{1.2 / 2, 1.2 / 3}));
    // Its step time likewise stops where it was lost.
    ChartView* times = charts->workerChart();
    QCOMPARE(times->pointCount(times->seriesIndex("worker 0")), 6);
    QCOMPARE(times->pointCount(times->seriesIndex("worker 1")), 2);
    // One marker, at the step that first reported the loss.
    QCOMPARE(loss->markerCount(), 1);
    QCOMPARE(loss->markerText(0), QString("worker 1 lost (step 4)"));
    QCOMPARE(charts->liveRun().lost_worker_count(), 1);
    QCOMPARE(charts->liveRun().lost_at.at(1), std::optional<int64_t>(4));
    QVERIFY(win.w.logPanel()->toPlainText().contains("worker 1 (cpu:1) lost"));
    // The staleness and server charts filled from the same events.
    ChartView* staleness = charts->stalenessChart();
    QCOMPARE(staleness->seriesValues(staleness->seriesIndex("staleness")), (std::vector<double>{1, 0, 1, 0, 1, 0}));
    QCOMPARE(staleness->pointCount(staleness->seriesIndex("bound (k = 1)")), 6);
    ChartView* servers = charts->serverUpdatesChart();
    QCOMPARE(servers->seriesCount(), 2);
    QCOMPARE(servers->seriesValues(servers->seriesIndex("server 1")), (std::vector<double>{90, 180, 270, 360, 450, 540}));
    QVERIFY(servers->toolTip().contains("server 1: dense/bias"));

    // Still lost in the next batch: no second marker, no new point.
    StepEvent more;
    more.step = more.epoch_step = 7;
    more.epoch = 1;
    more.replica_losses = {0.1, 0.1};
    more.staleness = 0;
    more.worker_steps = {7, 3};
    more.lost_workers = {1};
    more.server_updates_per_sec = {1, 1};
    Q_EMIT win.w.runController()->bridge()->events({more});
    QCOMPARE(loss->markerCount(), 1);
    QCOMPARE(loss->pointCount(w1), 2);
    QCOMPARE(loss->seriesLabel(w0), QString("worker 0 — 7 steps"));

    // The next run (not parameter-server) starts clean: no markers, replica
    // series, the parameter-server charts hidden.
    RunStartedEvent mirrored;
    mirrored.strategy = "mirrored";
    mirrored.replicas = 2;
    mirrored.steps_per_epoch = 10;
    Q_EMIT win.w.runController()->bridge()->events({mirrored});
    QCOMPARE(loss->markerCount(), 0);
    QCOMPARE(loss->seriesIndex("worker 1"), -1);
    QVERIFY(loss->seriesIndex("replica 1") >= 0);
    QVERIFY(!charts->parameterServerCharts()->isVisibleTo(charts));
    QCOMPARE(charts->serverUpdatesChart()->seriesCount(), 0);
  }
}

void DashboardTest::parameterServerSaveAndReopen() {
  const QString path = tmp_.filePath("saved-ps.strata");
  {
    Window win;
    configureParameterServer(win, copyProject("ps-save.strata"), 2, 2, 3);
    win.editor()->strategyPanel()->parameterServerSettings()->minShardBytesBox()->setValue(4096);
    QVERIFY(win.w.saveProjectAs(path));
    QVERIFY(!win.w.isModified());
  }
  {
    Window win;
    QVERIFY(win.w.openProject(path));
    QVERIFY(!win.w.isModified());  // loading the settings is not an edit
    const RunConfig c = win.w.currentConfig();
    QCOMPARE(QString::fromStdString(c.strategy.name), QString("parameter_server"));
    QCOMPARE(c.strategy.servers, 2);
    QCOMPARE(c.strategy.staleness, 3);
    QCOMPARE(c.strategy.min_shard_bytes, int64_t(4096));
    QCOMPARE(c.strategy.devices, (std::vector<std::string>{"cpu:0", "cpu:1"}));
    ParameterServerSettings* settings = win.editor()->strategyPanel()->parameterServerSettings();
    QVERIFY(settings->isVisibleTo(win.editor()->strategyPanel()));
    QCOMPARE(settings->serversBox()->value(), 2);
    QVERIFY(!settings->unboundedBox()->isChecked());
    QVERIFY(settings->stalenessBox()->isEnabled());
    QCOMPARE(settings->stalenessBox()->value(), 3);
    QCOMPARE(settings->minShardBytesBox()->value(), 4096);
    // Unbounded: the modified marker, the k box off, saved as null.
    QTest::mouseClick(settings->unboundedBox(), Qt::LeftButton, Qt::NoModifier, QPoint(6, settings->unboundedBox()->height() / 2));
    QVERIFY(settings->unboundedBox()->isChecked());
    QVERIFY(!settings->stalenessBox()->isEnabled());
    QVERIFY(win.w.isModified());
    QVERIFY(win.w.windowTitle().contains("*"));
    settings->serversBox()->setValue(3);
    QVERIFY(win.w.saveProject());
  }
  {
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const auto j = nlohmann::json::parse(f.readAll().toStdString());
    QVERIFY(j["strategy"]["staleness"].is_null());
    QCOMPARE(j["strategy"]["servers"].get<int>(), 3);
  }
  Window win;
  QVERIFY(win.w.openProject(path));
  const RunConfig c = win.w.currentConfig();
  QCOMPARE(c.strategy.staleness, -1);
  QCOMPARE(c.strategy.servers, 3);
  QCOMPARE(c.strategy.min_shard_bytes, int64_t(4096));
  ParameterServerSettings* settings = win.editor()->strategyPanel()->parameterServerSettings();
  QVERIFY(settings->unboundedBox()->isChecked());
  QVERIFY(!settings->stalenessBox()->isEnabled());
  QCOMPARE(settings->serversBox()->value(), 3);
  // Another strategy hides the settings.
  QVERIFY(win.editor()->strategyPanel()->setStrategy("mirrored"));
  QVERIFY(!settings->isVisibleTo(win.editor()->strategyPanel()));
}

void DashboardTest::parameterServerMpirunArguments() {
  // The command line itself needs no mpirun: it is built the same way
  // whether or not one is installed.
  StrategyConfig ps;
  ps.name = "parameter_server";
  ps.servers = 1;
  ps.staleness = 2;
  ps.min_shard_bytes = 4096;
  ps.devices = {"cpu:0"};
  MultiWorkerOptions o;
  o.processes = 2;  // worker processes; the server is a rank on top
  o.parameter_server_processes = true;
  const QStringList args = mpirun_arguments(o, "/bin/strata-run", "/r/project.strata", ps, "/r", false);
  const auto after = [&args](const char* flag) { return args.value(int(args.indexOf(flag)) + 1); };
  QVERIFY2(args.contains("--enable-recovery"), qPrintable(args.join(' ')));
  QCOMPARE(after("-np"), QString("3"));
  QCOMPARE(after("--strategy"), QString("parameter_server"));
  QCOMPARE(after("--servers"), QString("1"));
  QCOMPARE(after("--staleness"), QString("2"));
  QCOMPARE(after("--min-shard-bytes"), QString("4096"));
  QCOMPARE(after("--devices"), QString("cpu:0"));
  QCOMPARE(after("--events"), QString("jsonl"));
  QCOMPARE(after("--run-dir"), QString("/r"));
  QCOMPARE(after("/bin/strata-run"), QString("/r/project.strata"));
  // A host that drops off the network is found within half the collective
  // timeout (300 s by default): first probe after 75 s idle, 5 more 15 s apart.
  QCOMPARE(after("oob_tcp_keepalive_time"), QString("75"));
  QCOMPARE(after("oob_tcp_keepalive_intvl"), QString("15"));
  QCOMPARE(after("oob_tcp_keepalive_probes"), QString("5"));
  // mpirun's own options come before the program, strata-run's after it.
  QVERIFY(args.indexOf("--enable-recovery") < args.indexOf("/bin/strata-run"));
  QVERIFY(args.indexOf("oob_tcp_keepalive_time") < args.indexOf("/bin/strata-run"));
  QVERIFY(args.indexOf("--servers") > args.indexOf("/bin/strata-run"));
  ps.staleness = -1;  // unbounded
  ps.servers = 2;
  o.hosts = "n1:2, n2:3";
  const QStringList unbounded = mpirun_arguments(o, "/bin/strata-run", "/r/project.strata", ps, "/r", true);
  QCOMPARE(unbounded.value(int(unbounded.indexOf("--staleness")) + 1), QString("inf"));
  QCOMPARE(unbounded.value(int(unbounded.indexOf("-np")) + 1), QString("4"));
  QCOMPARE(unbounded.value(int(unbounded.indexOf("--host")) + 1), QString("n1:2,n2:3"));
  QCOMPARE(unbounded.value(int(unbounded.indexOf("--resume")) + 1), QString("/r"));
  // A multi-worker line is unchanged: no recovery (a lost rank is fatal
  // there), no parameter-server options, every rank a worker.
  StrategyConfig mw;
  mw.name = "multi_worker_mirrored";
  mw.devices = {"cpu:0", "cpu:1"};
  const QStringList multi = mpirun_arguments(o, "/bin/strata-run", "/r/project.strata", mw, "", false);
  QVERIFY(!multi.contains("--enable-recovery") && !multi.contains("--servers") && !multi.contains("--staleness"));
  QCOMPARE(multi.value(int(multi.indexOf("-np")) + 1), QString("2"));
  QCOMPARE(multi.value(int(multi.indexOf("--devices")) + 1), QString("cpu:0,cpu:1"));
  QVERIFY(multi.contains("--no-run-dir"));
  // Which runs go to mpirun.
  QVERIFY(launches_with_mpirun(mw, MultiWorkerOptions{}));
  QVERIFY(launches_with_mpirun(ps, o));
  QVERIFY(!launches_with_mpirun(ps, MultiWorkerOptions{}));

  // The panels: the choice sits in the parameter-server settings, enabled
  // exactly when the multi-worker strategy is (the same detection).
  Window win;
  QVERIFY(win.w.openProject(copyProject("ps-launch.strata")));
  StrategyPanel* panel = win.editor()->strategyPanel();
  QVERIFY(panel->setStrategy("parameter_server"));
  win.editor()->devicesPanel()->setSelectedDevices({"cpu:0"});
  QVERIFY(win.w.saveProject());
  ParameterServerSettings* settings = panel->parameterServerSettings();
  QCOMPARE(win.w.findChild<QRadioButton*>("psProcesses"), settings->processesButton());
  QCOMPARE(win.w.findChild<QRadioButton*>("psInProcess"), settings->inProcessButton());
  QVERIFY(settings->inProcessButton()->isChecked());  // the default
  QVERIFY(!panel->multiWorkerPanel()->isVisibleTo(panel));
  const bool can = mpi_built() && !find_mpirun().isEmpty() && !find_strata_run().isEmpty();
  QCOMPARE(settings->processesButton()->isEnabled(), can);
  QCOMPARE(settings->processesButton()->isEnabled(), panel->isAvailable("multi_worker_mirrored"));
  if (!can) {
    const QString tip = settings->processesButton()->toolTip();
    QVERIFY2(tip.contains("Not available") && tip.contains("mpirun"), qPrintable(tip));
    settings->setAcrossProcesses(true);  // refused
    QVERIFY(!settings->acrossProcesses());
    QVERIFY(!panel->multiWorkerOptions().parameter_server_processes);
    return;
  }
  QTest::mouseClick(settings->processesButton(), Qt::LeftButton, Qt::NoModifier, QPoint(6, settings->processesButton()->height() / 2));
  // A launch setting, like the multi-worker ones: not a project edit.
  QVERIFY(!win.w.isModified());
  chooseParameterServerProcesses(win, 2);
  QVERIFY(panel->multiWorkerOptions().parameter_server_processes);
  QCOMPARE(panel->multiWorkerOptions().processes, 2);
  QVERIFY2(panel->multiWorkerPanel()->noteText().contains("3 ranks"), qPrintable(panel->multiWorkerPanel()->noteText()));
  settings->serversBox()->setValue(2);
  QVERIFY2(panel->multiWorkerPanel()->noteText().contains("4 ranks"), qPrintable(panel->multiWorkerPanel()->noteText()));
  // Back in this process: the mpirun settings go away again, and two
  // devices are two worker threads.
  QTest::mouseClick(settings->inProcessButton(), Qt::LeftButton, Qt::NoModifier, QPoint(6, settings->inProcessButton()->height() / 2));
  QVERIFY(!panel->multiWorkerPanel()->isVisibleTo(panel));
  QVERIFY(!panel->multiWorkerOptions().parameter_server_processes);
  win.editor()->devicesPanel()->setSelectedDevices({"cpu:0", "cpu:1"});
  QVERIFY(win.w.saveProject());
  // Processes again: the second device goes, and that is a project edit.
  chooseParameterServerProcesses(win, 2);
  QVERIFY(win.w.isModified());
  QCOMPARE(win.w.currentConfig().strategy.devices, std::vector<std::string>{"cpu:0"});
  // Another strategy hides the mpirun settings; MultiWorkerMirrored shows
  // them again, worded for its ranks.
  QVERIFY(panel->setStrategy("mirrored"));
  QVERIFY(!panel->multiWorkerPanel()->isVisibleTo(panel));
  QVERIFY(panel->setStrategy("multi_worker_mirrored"));
  QVERIFY(panel->multiWorkerPanel()->isVisibleTo(panel));
  QVERIFY(!panel->multiWorkerPanel()->noteText().contains("ranks:"));
}

void DashboardTest::chooseParameterServerProcesses(Window& win, int workers) {
  StrategyPanel* panel = win.editor()->strategyPanel();
  ParameterServerSettings* settings = panel->parameterServerSettings();
  QRadioButton* processes = settings->processesButton();
  QVERIFY(processes->isEnabled());
  QTest::mouseClick(processes, Qt::LeftButton, Qt::NoModifier, QPoint(6, processes->height() / 2));
  QVERIFY(processes->isChecked());
  QVERIFY(settings->acrossProcesses());
  MultiWorkerPanel* mpi = panel->multiWorkerPanel();
  QVERIFY(mpi->isVisibleTo(panel));
  mpi->processesBox()->setValue(workers);
  // One device per worker process: the second one was dropped.
  QCOMPARE(win.editor()->devicesPanel()->selectedDevices(), QStringList({"cpu:0"}));
  QVERIFY2(win.editor()->devicesPanel()->summary().contains("Each worker process trains on cpu:0"),
           qPrintable(win.editor()->devicesPanel()->summary()));
  check_device(win.w.findChild<QListWidget*>("deviceList"), "cpu:1", true);  // checking another moves the choice
  QCOMPARE(win.editor()->devicesPanel()->selectedDevices(), QStringList({"cpu:1"}));
  check_device(win.w.findChild<QListWidget*>("deviceList"), "cpu:0", true);
  QCOMPARE(win.editor()->devicesPanel()->selectedDevices(), QStringList({"cpu:0"}));
}

namespace {
void write(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(bytes);
}
}  // namespace

void DashboardTest::mpirunLaunchOptionsAreValidated() {
  // Hosts and hostfiles go to mpirun's command line (as arguments, never
  // through a shell): anything but host[:slots] entries is refused with
  // the reason before mpirun starts.
  MultiWorkerOptions o;
  QVERIFY(launch_options_problem(o).isEmpty());
  o.hosts = "node1:4, node-2.example.org:2,10.0.0.7";
  QVERIFY2(launch_options_problem(o).isEmpty(), qPrintable(launch_options_problem(o)));
  for (const char* bad : {"node1;rm -rf ~", "-x LD_PRELOAD=/tmp/evil.so", "node1:0", "node1:4:5", "$(reboot)", "n1,,n2"}) {
    o.hosts = bad;
    const QString why = launch_options_problem(o);
    QVERIFY2(why.contains("hosts:"), bad);
  }
  QTemporaryDir tmp;
  const QString good = tmp.filePath("hosts"), evil = tmp.filePath("evil");
  write(good, "# two nodes\nnode1 slots=4\nnode2 slots=2 max_slots=8\n\n");
  write(evil, "node1 slots=4\nnode2 --mca plm_rsh_agent /tmp/evil.sh\n");
  o.hosts.clear();
  o.hostfile = good;
  QVERIFY2(launch_options_problem(o).isEmpty(), qPrintable(launch_options_problem(o)));
  o.hostfile = evil;
  QVERIFY(launch_options_problem(o).contains("line 2"));
  o.hostfile = tmp.filePath("missing");
  QVERIFY(launch_options_problem(o).contains("not a readable file"));
  o.hostfile = tmp.path();  // a folder
  QVERIFY(launch_options_problem(o).contains("not a readable file"));
}

void DashboardTest::parameterServerProcessesRun() {
  if (!mpi_built() || find_mpirun().isEmpty()) QSKIP("needs an MPI build and mpirun");
  Window win;
  const int epochs = 20;
  configureParameterServer(win, copyProject("ps-mpi.strata"), epochs, 1, 2);
  chooseParameterServerProcesses(win, 2);
  QVERIFY(win.w.saveProject());
  win.w.startRun();
  QVERIFY(win.w.runController()->running());
  QVERIFY(win.w.runController()->acrossProcesses());
  QVERIFY(!win.w.findChild<QAction*>("pauseAction")->isEnabled());
  const QStringList cmd = win.w.runController()->lastCommand();
  QVERIFY2(cmd.contains("--enable-recovery"), qPrintable(cmd.join(' ')));
  QCOMPARE(cmd.value(int(cmd.indexOf("-np")) + 1), QString("3"));
  QCOMPARE(cmd.value(int(cmd.indexOf("--servers")) + 1), QString("1"));
  QCOMPARE(cmd.value(int(cmd.indexOf("--staleness")) + 1), QString("2"));
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 120000);
  QVERIFY2(win.presenter->errors.isEmpty(), qPrintable(win.presenter->errors.join("\n")));
  QVERIFY2(win.w.statusPanel()->statusText().startsWith("Completed"),
           qPrintable(win.w.statusPanel()->statusText() + "\n" + win.w.logPanel()->toPlainText()));

  const int steps = epochs * 16;
  ChartsPanel* charts = win.w.charts();
  const RunSeries& live = charts->liveRun();
  QVERIFY(live.started);
  QCOMPARE(QString::fromStdString(live.started->strategy), QString("parameter_server"));
  QCOMPARE(live.started->replicas, 2);  // the worker ranks
  QCOMPARE(live.started->servers, 1);
  QCOMPARE(live.started->staleness_bound, std::optional<int>(2));
  QVERIFY(live.finished && live.finished->status == RunStatus::Completed);
  QCOMPARE(int(live.step.size()), steps);
  QVERIFY(charts->parameterServerCharts()->isVisibleTo(charts));
  // Staleness: a point a step, none above the bound.
  ChartView* staleness = charts->stalenessChart();
  const int st = staleness->seriesIndex("staleness");
  QVERIFY(st >= 0);
  QCOMPARE(staleness->pointCount(st), steps);
  for (double v : staleness->seriesValues(st)) QVERIFY2(v >= 0 && v <= 2, qPrintable(QString::number(v)));
  QVERIFY(staleness->seriesIndex("bound (k = 2)") >= 0);
  // Across processes the chief reports its own server's rate: one series.
  QCOMPARE(charts->serverUpdatesChart()->seriesCount(), 1);
  // A loss series per worker rank, besides the reduced loss.
  ChartView* loss = charts->lossChart();
  QCOMPARE(loss->pointCount(loss->seriesIndex("loss (reduced)")), steps);
  for (size_t w = 0; w < 2; ++w) {
    const int i = loss->seriesIndex(ParameterServerCharts::workerSeriesName(w));
    QVERIFY2(i >= 0, qPrintable(ParameterServerCharts::workerSeriesName(w)));
    QVERIFY(loss->pointCount(i) > 0);
    QVERIFY(live.worker_steps.at(w) > 0);
  }
  QCOMPARE(loss->seriesIndex("worker 2"), -1);  // the server is no worker
  QCOMPARE(live.lost_worker_count(), 0);
  // Rank 0 wrote the run folder from the file the dashboard saved for it.
  const QString run_dir = win.w.runController()->lastRunDir();
  QVERIFY(QFile::exists(run_dir + "/events.jsonl"));
  QVERIFY(QFile::exists(run_dir + "/project.strata"));
  QCOMPARE(win.w.historyPanel()->runCount(), 1);
}

void DashboardTest::parameterServerProcessesStop() {
  if (!mpi_built() || find_mpirun().isEmpty()) QSKIP("needs an MPI build and mpirun");
  Window win;
  configureParameterServer(win, copyProject("ps-mpi-stop.strata"), 100000, 1, 2);
  chooseParameterServerProcesses(win, 2);
  QVERIFY(win.w.saveProject());
  // The status is the stream's (mpirun exits 0 here whatever happened).
  stopAcrossProcessesGracefully(win);
}

void DashboardTest::screenshotMidRun() {
  Window win;
  QVERIFY(win.w.openTemplate(STRATA_SOURCE_DIR "/resources/examples/fashion-mlp.strata"));
  if (!win.editor()->strategyPanel()->setStrategy("mirrored")) QFAIL("mirrored unavailable");
  win.editor()->devicesPanel()->setSelectedDevices({"cpu:0", "cpu:1"});
  win.w.resize(1600, 1000);
  screenshotAfterFourEpochs(win, "dashboard.png");
}

// The picture in docs/dashboard.md: three asynchronous workers on the
// Fashion-MNIST MLP, two parameter servers, no bound.
void DashboardTest::screenshotParameterServer() {
  Window win;
  QVERIFY(win.w.openTemplate(STRATA_SOURCE_DIR "/resources/examples/fashion-mlp.strata"));
  auto* ps = win.w.findChild<QRadioButton*>("strategy_parameter_server");
  QVERIFY(ps && ps->isEnabled());
  QTest::mouseClick(ps, Qt::LeftButton, Qt::NoModifier, QPoint(8, ps->height() / 2));
  ParameterServerSettings* settings = win.editor()->strategyPanel()->parameterServerSettings();
  settings->serversBox()->setValue(2);
  settings->unboundedBox()->setChecked(true);
  win.editor()->devicesPanel()->setSelectedDevices({"cpu:0", "cpu:1", "cpu:2"});
  win.w.resize(1600, 1100);
  screenshotAfterFourEpochs(win, "dashboard-parameter-server.png");
}

// The picture in docs/timeline.md: a merged trace of a real two-rank run,
// rendered in the Timeline tab. Only on request, with the trace made by
// mpirun and strata-run --merge-traces (docs/timeline.md says how):
//   STRATA_SCREENSHOT_TRACE=merged.json test_ui_dashboard screenshotMergedTrace
void DashboardTest::screenshotMergedTrace() {
  const QString file = qEnvironmentVariable("STRATA_SCREENSHOT_TRACE");
  if (file.isEmpty()) QSKIP("set STRATA_SCREENSHOT_TRACE to a merged trace to render timeline-merged.png");
  Window win;
  win.w.resize(1600, 1000);
  win.w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&win.w));
  // The tab at a size where four lanes and the table read well.
  if (auto* right = qobject_cast<QSplitter*>(win.w.charts()->parentWidget())) right->setSizes({250, 750});
  if (auto* lower = qobject_cast<QSplitter*>(win.w.statusPanel()->parentWidget())) lower->setSizes({0, 1600});
  TimelinePanel* timeline = show_timeline_tab(win);
  QVERIFY(timeline);
  win.presenter->open_path = file;
  QTest::mouseClick(timeline->findChild<QPushButton*>("openTraceButton"), Qt::LeftButton);
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.readingTrace(), 60000);
  QVERIFY2(win.presenter->errors.isEmpty(), qPrintable(win.presenter->errors.join("\n")));
  QVERIFY(timeline->showingFile());
  // A dozen steps from the middle of the run: steady state, each span wide
  // enough to see (the last steps share the axis with the evaluation after them).
  auto* first = timeline->findChild<QSpinBox*>("timelineFirstStep");
  auto* count = timeline->findChild<QSpinBox*>("timelineStepsShown");
  QVERIFY(first && count);
  count->setValue(12);
  first->setValue(first->minimum() + (first->maximum() - first->minimum()) / 2 - 6);
  timeline->plot()->replot();
  save_screenshot(timeline->parentWidget()->parentWidget(), "timeline-merged.png");
  qInfo("screenshot: %s (%d lanes, steps %lld-%lld of %d)", STRATA_BINARY_DIR "/ui-screenshots/timeline-merged.png",
        timeline->laneCount(), static_cast<long long>(timeline->stepsKept().front()),
        static_cast<long long>(timeline->stepsKept().back()), timeline->fileStepCount());
}

void DashboardTest::screenshotAfterFourEpochs(Window& win, const QString& file) {
  win.editor()->trainingPanel()->maxStepsBox()->setValue(120);
  win.editor()->trainingPanel()->epochsBox()->setValue(12);
  win.w.show();
  QTRY_VERIFY_WITH_TIMEOUT(!win.editor()->datasetPanel()->previewBusy(), 60000);
  // Only a missing dataset skips: another preview error fails the test.
  const QString images = QString::fromStdString(fashion_mnist_dir() + "/train-images-idx3-ubyte");
  if (!QFile::exists(images + ".gz") && !QFile::exists(images)) QSKIP("Fashion-MNIST is not installed");
  QVERIFY2(win.editor()->datasetPanel()->previewError().isEmpty(), qPrintable(win.editor()->datasetPanel()->previewError()));
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
  QVERIFY(shot.save(dir + "/" + file));
  qInfo("screenshot: %s", qPrintable(dir + "/" + file));
  win.w.stopRun();
  QTRY_VERIFY_WITH_TIMEOUT(!win.w.runController()->running(), 60000);
}

QTEST_MAIN(DashboardTest)
#include "test_ui_dashboard.moc"
