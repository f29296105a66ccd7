#include "ChartsPanel.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QSlider>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>
#include <cmath>

#include "Palette.h"
#include "ParameterServerCharts.h"
#include "PlotLegend.h"

namespace strata::ui {

ChartsPanel::ChartsPanel(QWidget* parent)
    : QWidget(parent),
      loss_(new ChartView(tr("Loss"), tr("loss"))),
      accuracy_(new ChartView(tr("Accuracy"), tr("accuracy"))),
      throughput_(new ChartView(tr("Throughput"), tr("samples/s"))),
      workers_(new ChartView(tr("Step time"), tr("compute ms/step"))),
      ps_(new ParameterServerCharts(loss_)) {
  loss_->setObjectName("lossChart");
  accuracy_->setObjectName("accuracyChart");
  throughput_->setObjectName("throughputChart");
  workers_->setObjectName("workerChart");
  workers_->setToolTip(
      tr("Milliseconds each replica (or, across processes, each worker) spent computing per step, "
         "not waiting in collectives: a straggler is the highest line"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* bar = new QHBoxLayout;
  x_mode_ = new QComboBox(this);
  x_mode_->setObjectName("xAxisMode");
  x_mode_->addItems({tr("Step"), tr("Epoch"), tr("Wall time")});
  smoothing_ = new QSlider(Qt::Horizontal, this);
  smoothing_->setObjectName("smoothing");
  // Thousandths, as TensorBoard's slider: arrow keys move 0.005, the groove 0.05.
  smoothing_->setRange(0, 999);
  smoothing_->setSingleStep(5);
  smoothing_->setPageStep(50);
  smoothing_->setMaximumWidth(160);
  smoothing_->setToolTip(tr("Exponential moving average with bias correction, as TensorBoard draws it; "
                            "the raw series stays faint behind"));
  smoothing_label_ = new QLabel(tr("0.000"), this);
  log_ = new QCheckBox(tr("Log scale"), this);
  log_->setObjectName("logScale");
  auto* reset = new QPushButton(tr("Reset view"), this);
  reset->setToolTip(tr("Follow the data again (mouse wheel zooms, drag pans, double-click resets)"));
  auto* exporter = new QToolButton(this);
  exporter->setText(tr("Export"));
  exporter->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(exporter);
  for (ChartView* chart : charts()) {
    for (const QString kind : {"png", "pdf", "csv"}) {
      const QString title = chart->objectName().chopped(5);  // lossChart -> loss
      menu->addAction(tr("%1 chart as %2…").arg(title, kind.toUpper()), chart, [chart, kind] { chart->exportWithDialog(kind); });
    }
    menu->addSeparator();
  }
  exporter->setMenu(menu);
  bar->addWidget(new QLabel(tr("X axis"), this));
  bar->addWidget(x_mode_);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("Smoothing"), this));
  bar->addWidget(smoothing_);
  bar->addWidget(smoothing_label_);
  bar->addSpacing(12);
  bar->addWidget(log_);
  bar->addWidget(reset);
  bar->addWidget(exporter);
  bar->addStretch();
  layout->addLayout(bar);

  auto* split = new QSplitter(Qt::Vertical, this);
  auto* bottom = new QSplitter(Qt::Horizontal, split);
  split->addWidget(loss_);
  split->addWidget(bottom);
  bottom->addWidget(accuracy_);
  bottom->addWidget(throughput_);
  bottom->addWidget(workers_);
  level_legends({accuracy_->plot(), throughput_->plot(), workers_->plot()});
  split->addWidget(ps_);  // hidden unless a parameter-server run is shown
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setStretchFactor(2, 2);
  layout->addWidget(split, 1);

  connect(x_mode_, &QComboBox::currentIndexChanged, this, [this](int i) { setXMode(static_cast<XAxisMode>(i)); });
  connect(smoothing_, &QSlider::valueChanged, this, [this](int v) { setSmoothing(v / 1000.0); });
  connect(log_, &QCheckBox::toggled, this, &ChartsPanel::setLogScale);
  connect(reset, &QPushButton::clicked, this, &ChartsPanel::resetViews);
}

std::vector<ChartView*> ChartsPanel::charts() const {
  return {loss_, accuracy_, throughput_, workers_, ps_->stalenessChart(), ps_->serverChart()};
}

double ChartsPanel::lastReplotMs() const {
  double ms = 0;
  for (auto* c : charts())
    if (c->isVisible()) ms += c->plot()->replotTime();
  return ms;
}

ChartView* ChartsPanel::stalenessChart() const { return ps_->stalenessChart(); }
ChartView* ChartsPanel::serverUpdatesChart() const { return ps_->serverChart(); }

QString ChartsPanel::replicaSeriesName(size_t r) const {
  return live_.is_parameter_server() ? ParameterServerCharts::workerSeriesName(r) : QStringLiteral("replica %1").arg(r);
}

void ChartsPanel::clearAll() {
  for (auto* c : charts()) c->clear();
  ps_->clear();
  live_ = RunSeries{};
  replica_series_.clear();
  worker_times_.clear();
  replica_times_.clear();
  prelude_.clear();
  reduced_ = val_loss_ = train_acc_ = val_acc_ = speed_ = -1;
  overlays_ = 0;
  best_marker_ = -1;
}

void ChartsPanel::beginRun(const RunStartedEvent& e) {
  // The previous live run's series go; overlays (named after their run
  // folder) stay.
  for (const char* prefix : {"replica ", "worker ", "loss (reduced)", "validation loss"}) loss_->removeSeries(tr(prefix));
  loss_->clearMarkers();  // the previous run's divergence or lost workers
  for (const char* prefix : {"train accuracy", "validation accuracy"}) accuracy_->removeSeries(tr(prefix));
  accuracy_->clearMarkers();  // the previous run's best epoch
  best_marker_ = -1;
  throughput_->removeSeries(tr("samples/s"));
  workers_->clear();  // never overlaid: only the live run's workers
  worker_times_.clear();
  replica_times_.clear();
  times_per_replica_ = e.servers == 0 && e.replicas > std::max(1, e.workers);
  live_ = RunSeries{};
  live_.label = "live";
  live_.add(e);  // first: the series names depend on the strategy
  replica_series_.clear();
  for (int r = 0; r < e.replicas; ++r) {
    ChartView::Style s;
    s.color = series_color(static_cast<size_t>(r));
    s.width = 1.2;
    replica_series_.push_back(loss_->addSeries(replicaSeriesName(static_cast<size_t>(r)), s));
  }
  ChartView::Style bold;
  bold.color = Qt::black;
  bold.width = 2.8;
  bold.on_top = true;
  reduced_ = loss_->addSeries(tr("loss (reduced)"), bold);
  ChartView::Style epoch_style;
  epoch_style.points = true;
  epoch_style.smoothable = false;
  epoch_style.color = validation_color();
  epoch_style.pen = Qt::DashLine;
  epoch_style.width = 2.0;
  // Above the reduced loss (added after it on the same top layer): the two
  // lie close together, and validation is what the eye looks for.
  epoch_style.on_top = true;
  val_loss_ = loss_->addSeries(tr("validation loss"), epoch_style);
  epoch_style.on_top = false;
  epoch_style.width = 1.5;
  // Training accuracy per step, smoothed like the loss; validation per epoch.
  ChartView::Style train_acc;
  train_acc.color = series_color(0);
  train_acc.width = 1.2;
  train_acc_ = accuracy_->addSeries(tr("train accuracy"), train_acc);
  epoch_style.pen = Qt::SolidLine;
  epoch_style.color = validation_color();
  val_acc_ = accuracy_->addSeries(tr("validation accuracy"), epoch_style);
  ChartView::Style speed;
  speed.color = QColor(44, 160, 44);
  speed_ = throughput_->addSeries(tr("samples/s"), speed);
  for (size_t i = 0; i < static_cast<size_t>(times_per_replica_ ? e.replicas : std::max(1, e.workers)); ++i)
    times_per_replica_ ? replicaTimeSeries(i) : workerTimeSeries(i);
  ps_->beginRun(e);
  flushAll();
}

void ChartsPanel::addStep(const StepEvent& s) {
  const XPoint x{static_cast<double>(s.step), live_.epoch_position(s), s.time};
  ps_->addStep(s, x);  // first: it knows which workers' figures are real
  for (size_t r = 0; r < replica_series_.size() && r < s.replica_losses.size(); ++r)
    if (ps_->drawsWorker(r)) loss_->append(replica_series_[r], x, s.replica_losses[r]);
  loss_->append(reduced_, x, s.loss);
  if (std::isfinite(s.accuracy)) accuracy_->append(train_acc_, x, s.accuracy);
  throughput_->append(speed_, x, s.samples_per_sec);
  // Milliseconds: a GPU step of 0.1 ms reads as that, not as 0.0001 s.
  if (times_per_replica_ && !s.replica_step_times.empty()) {
    for (size_t r = 0; r < s.replica_step_times.size(); ++r)
      workers_->append(replicaTimeSeries(r), x, 1e3 * s.replica_step_times[r]);
  } else {
    // Across processes, or a step replayed as one graph (replicas not timed apart).
    for (size_t w = 0; w < s.worker_step_times.size(); ++w)
      if (ps_->drawsWorker(w)) workers_->append(workerTimeSeries(w), x, 1e3 * s.worker_step_times[w]);
  }
  if (!std::isfinite(s.loss) && live_.diverged_at == live_.step.size() - 1) {
    const QString what = std::isnan(s.loss) ? "NaN" : "Inf";
    loss_->addMarker(x, tr("loss %1 at step %2: diverged").arg(what).arg(s.step));
  }
}

void ChartsPanel::addEpoch(const EpochEvent& e) {
  const double per_epoch = live_.started ? static_cast<double>(live_.started->steps_per_epoch) : 0.0;
  const XPoint x{e.epoch * per_epoch, static_cast<double>(e.epoch), e.time};
  if (e.val_accuracy) accuracy_->append(val_acc_, x, *e.val_accuracy);
  if (e.val_loss) loss_->append(val_loss_, x, *e.val_loss);
  if (e.best && e.val_accuracy) {
    // The epoch whose checkpoint is kept as the best: one marker that moves.
    const QString text = tr("best: epoch %1, val acc %2").arg(e.epoch).arg(*e.val_accuracy, 0, 'f', 4);
    if (best_marker_ < 0) {
      accuracy_->addMarker(x, text, QColor(30, 130, 60), 0.72);  // below the curves, which sit high
      best_marker_ = accuracy_->markerCount() - 1;
    } else {
      accuracy_->moveMarker(best_marker_, x, text);
    }
  }
}

int ChartsPanel::workerTimeSeries(size_t w) { return timeSeries(worker_times_, w, QStringLiteral("worker %1").arg(w)); }

int ChartsPanel::replicaTimeSeries(size_t r) { return timeSeries(replica_times_, r, QStringLiteral("replica %1").arg(r)); }

int ChartsPanel::timeSeries(std::vector<int>& cache, size_t i, const QString& name) {
  if (i < cache.size() && cache[i] >= 0) return cache[i];
  if (cache.size() <= i) cache.resize(i + 1, -1);
  ChartView::Style s;
  s.color = series_color(i);
  s.width = 1.2;
  cache[i] = workers_->addSeries(name, s);
  return cache[i];
}

void ChartsPanel::addEventToLive(const Event& ev) {
  live_.add(ev);
  if (auto* s = std::get_if<StepEvent>(&ev)) addStep(*s);
  else if (auto* e = std::get_if<EpochEvent>(&ev)) addEpoch(*e);
}

void ChartsPanel::addEvents(const std::vector<Event>& batch) {
  for (const auto& ev : batch) {
    if (auto* r = std::get_if<RunStartedEvent>(&ev)) {
      beginRun(*r);
      // A resumed run: its earlier steps first, so the new ones continue them.
      for (const auto& old : prelude_)
        if (!std::holds_alternative<RunStartedEvent>(old)) addEventToLive(old);
      prelude_.clear();
      continue;
    }
    if (reduced_ < 0) continue;  // events of a run we did not see start
    addEventToLive(ev);
  }
  flushAll();
}

void ChartsPanel::addOverlay(const RunSeries& run, const QString& label) {
  // Overlaid runs: their own colours (from the end of the palette, away
  // from the live replicas' first ones) and dash-dot lines, never the
  // validation series' red dashes.
  const QColor color = series_color(static_cast<size_t>(7 - overlays_++ % 5)).darker(115);
  ChartView::Style s;
  s.color = color;
  s.pen = Qt::DashDotLine;
  s.width = 1.6;
  const int loss = loss_->addSeries(label + " · loss", s);
  loss_->appendMany(loss, run.step, run.epoch_pos, run.time, run.loss);
  const int speed = throughput_->addSeries(label + " · samples/s", s);
  throughput_->appendMany(speed, run.step, run.epoch_pos, run.time, run.samples_per_sec);
  ps_->addOverlay(run, label, s);
  s.points = true;
  s.smoothable = false;
  const int acc = accuracy_->addSeries(label + " · validation accuracy", s);
  const double per_epoch = run.started ? static_cast<double>(run.started->steps_per_epoch) : 0.0;
  for (const auto& e : run.epochs)
    if (e.val_accuracy) accuracy_->append(acc, XPoint{e.epoch * per_epoch, static_cast<double>(e.epoch), e.time}, *e.val_accuracy);
  flushAll();
}

void ChartsPanel::removeOverlay(const QString& label) {
  for (auto* c : {loss_, accuracy_, throughput_}) c->removeSeries(label + " · ");
  ps_->removeOverlay(label);
  // Removing series renumbers the ones after them.
  for (size_t r = 0; r < replica_series_.size(); ++r) replica_series_[r] = loss_->seriesIndex(replicaSeriesName(r));
  reduced_ = loss_->seriesIndex(tr("loss (reduced)"));
  val_loss_ = loss_->seriesIndex(tr("validation loss"));
  train_acc_ = accuracy_->seriesIndex(tr("train accuracy"));
  val_acc_ = accuracy_->seriesIndex(tr("validation accuracy"));
  speed_ = throughput_->seriesIndex(tr("samples/s"));
}

void ChartsPanel::setXMode(XAxisMode mode) {
  if (x_mode_->currentIndex() != static_cast<int>(mode)) x_mode_->setCurrentIndex(static_cast<int>(mode));
  for (auto* c : charts()) c->setXMode(mode);
}

void ChartsPanel::setSmoothing(double weight) {
  const int v = static_cast<int>(std::lround(weight * 1000));
  if (smoothing_->value() != v) smoothing_->setValue(v);
  smoothing_label_->setText(QString::number(weight, 'f', 3));
  // The accuracy chart too: its per-step training accuracy (validation
  // points are per epoch and never smoothed).
  for (auto* c : {loss_, accuracy_, throughput_, workers_, ps_->serverChart()}) c->setSmoothing(weight);
}

void ChartsPanel::setLogScale(bool on) {
  if (log_->isChecked() != on) log_->setChecked(on);
  loss_->setLogScale(on);
}

void ChartsPanel::resetViews() {
  for (auto* c : charts()) c->resetView();
}

void ChartsPanel::flushAll() {
  ps_->refreshLegend();
  for (auto* c : charts()) c->flush();
}

}  // namespace strata::ui
