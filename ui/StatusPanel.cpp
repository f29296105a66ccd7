#include "StatusPanel.h"

#include "Wording.h"

#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

namespace strata::ui {

namespace {
QString duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return QStringLiteral("--:--");
  const auto s = static_cast<qint64>(seconds + 0.5);
  return s >= 3600 ? QStringLiteral("%1:%2:%3").arg(s / 3600).arg(s / 60 % 60, 2, 10, QChar('0')).arg(s % 60, 2, 10, QChar('0'))
                   : QStringLiteral("%1:%2").arg(s / 60, 2, 10, QChar('0')).arg(s % 60, 2, 10, QChar('0'));
}
}  // namespace

StatusPanel::StatusPanel(QWidget* parent)
    : QWidget(parent),
      run_line_(new QLabel(this)),
      workers_(new QLabel(this)),
      progress_(new QProgressBar(this)),
      speed_(new QLabel(this)),
      status_(new QLabel(this)),
      devices_(new QTableWidget(0, 3, this)) {
  auto* layout = new QVBoxLayout(this);
  run_line_->setWordWrap(true);
  progress_->setObjectName("runProgress");
  // Wrapped, the figures never widen the panel (unwrapped, a fast run's
  // line set its minimum width, and a small window cut it off). The bar's
  // text does not wrap: the panel is at least as wide as a long run's.
  speed_->setWordWrap(true);
  progress_->setMinimumWidth(
      progress_->fontMetrics().horizontalAdvance(tr("epoch 100/100 · step 100000/100000 · ETA 00:00:00")) + 24);
  status_->setObjectName("runStatus");
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  devices_->setHorizontalHeaderLabels({tr("Device"), tr("Utilisation"), tr("Memory")});
  devices_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  devices_->verticalHeader()->hide();
  devices_->setMaximumHeight(110);
  devices_->hide();  // shown once the engine sends device statistics
  workers_->setObjectName("workersLine");
  workers_->setWordWrap(true);
  layout->addWidget(run_line_);
  layout->addWidget(workers_);
  layout->addWidget(progress_);
  layout->addWidget(speed_);
  layout->addWidget(status_);
  layout->addWidget(devices_);
  layout->addStretch();
  reset();
}

void StatusPanel::reset() {
  run_line_->setText(tr("Not running."));
  workers_->clear();
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat(tr("idle"));
  speed_->clear();
  status_->clear();
  status_->setStyleSheet({});
}

void StatusPanel::onStarted(const RunStartedEvent& e) {
  epochs_ = e.epochs;
  last_epoch_ = 1;
  last_step_ = 0;
  steps_per_epoch_ = e.steps_per_epoch;
  total_steps_ = e.steps_per_epoch * e.epochs;
  QStringList devices;
  for (const auto& d : e.devices) devices << QString::fromStdString(d);
  run_line_->setText(
      tr("<b>%1</b> on %2 [%3] · global batch %4 · %5 steps/epoch · %6 parameters · %7 · all-reduce: %8")
          .arg(QString::fromStdString(e.strategy))
          .arg(counted(e.replicas, tr("replica"), tr("replicas")))
          .arg(devices.join(", "))
          .arg(e.global_batch)
          .arg(e.steps_per_epoch)
          .arg(e.params)
          .arg(QString::fromStdString(e.dataset).toHtmlEscaped())
          .arg(QString::fromStdString(e.cross_device_ops) + (e.sharded_update ? tr(", sharded update") : QString())));
  // Which processes (MPI ranks) on which hosts: a multi-worker run's
  // replicas are spread over them, in rank order.
  QStringList hosts;
  for (size_t r = 0; r < e.hosts.size(); ++r) hosts << tr("%1 (rank %2)").arg(QString::fromStdString(e.hosts[r])).arg(r);
  QString workers = counted(e.workers, tr("worker process"), tr("worker processes")) +
                    (hosts.isEmpty() ? QString() : ": " + hosts.join(", "));
  // A parameter-server run's workers are its replicas (threads of this
  // process); what it adds is where the variables live and the bound.
  if (e.servers > 0)
    workers += " · " + counted(e.servers, tr("parameter server"), tr("parameter servers")) +
               tr(", staleness %1").arg(e.staleness_bound ? tr("≤ %1").arg(*e.staleness_bound) : tr("unbounded"));
  workers_->setText(workers);
  workers_->setToolTip(QString::fromStdString(e.shards).replace("; ", "\n"));
  progress_->setRange(0, static_cast<int>(std::max<int64_t>(1, total_steps_)));
  progress_->setValue(0);
  progress_->setFormat(positionText());
  status_->setText(tr("Running…"));
  status_->setStyleSheet({});
}

QString StatusPanel::positionText() const {
  return tr("epoch %1/%2 · step %3/%4").arg(last_epoch_).arg(epochs_).arg(last_step_).arg(total_steps_);
}

void StatusPanel::onStep(const StepEvent& e) {
  last_epoch_ = e.epoch;
  last_step_ = e.step;
  progress_->setValue(static_cast<int>(std::min<int64_t>(e.step, total_steps_)));
  // Time per step so far, excluding pauses (the engine's clock skips them).
  const double eta = e.step > 0 ? (static_cast<double>(total_steps_ - e.step)) * e.time / static_cast<double>(e.step) : NAN;
  progress_->setFormat(positionText() + tr(" · ETA %1").arg(duration(eta)));
  speed_->setText(tr("%1 samples/s · loss %2 · lr %3 · elapsed %4")
                      .arg(e.samples_per_sec, 0, 'f', 0)
                      .arg(e.loss, 0, 'g', 5)
                      .arg(e.lr, 0, 'g', 3)
                      .arg(duration(e.time)));
}

void StatusPanel::onDeviceStats(const DeviceStatsEvent& e) {
  devices_->show();
  devices_->setRowCount(static_cast<int>(e.devices.size()));
  for (size_t i = 0; i < e.devices.size(); ++i) {
    const auto& d = e.devices[i];
    const auto r = static_cast<int>(i);
    devices_->setItem(r, 0, new QTableWidgetItem(QString::fromStdString(d.device)));
    devices_->setItem(r, 1, new QTableWidgetItem(d.utilization ? QString("%1 %").arg(*d.utilization * 100, 0, 'f', 0) : "—"));
    QString mem = "—";
    if (d.memory_used && d.memory_total)
      mem = QString("%1 / %2 MiB").arg(*d.memory_used >> 20).arg(*d.memory_total >> 20);
    devices_->setItem(r, 2, new QTableWidgetItem(mem));
  }
}

void StatusPanel::setPaused(bool paused) {
  if (paused) status_->setText(tr("Paused (after the current step)."));
  else if (status_->text().startsWith(tr("Paused"))) status_->setText(tr("Running…"));
}

void StatusPanel::onFinished(const FinishedEvent& e) {
  const QString msg = QString::fromStdString(e.message);
  // The run is over: no estimate of time left, and the bar says where it
  // ended, as the message does.
  progress_->setFormat(positionText());
  if (e.status == RunStatus::Completed) {
    status_->setText(tr("Completed %1 (%2, %3)")
                         .arg(counted(e.epochs_completed, tr("epoch"), tr("epochs")))
                         .arg(counted(e.steps, tr("step"), tr("steps")))
                         .arg(duration(e.time)));
    status_->setStyleSheet("color: #060;");
    // Ended by early stopping: the bar stays where the run ended, and the
    // status says why it ended there.
    if (e.stopped_early) status_->setText(status_->text() + tr(": %1").arg(msg));
    else progress_->setValue(progress_->maximum());
  } else if (e.status == RunStatus::Stopped) {
    status_->setText(tr("Stopped: %1").arg(msg));
    status_->setStyleSheet("color: #a60;");
  } else {
    status_->setText(tr("Failed: %1").arg(msg));
    status_->setStyleSheet("color: #b00; font-weight: bold;");
  }
}

QString StatusPanel::workersText() const { return workers_->text(); }
QString StatusPanel::statusText() const { return status_->text(); }
QString StatusPanel::progressText() const { return progress_->text(); }
int StatusPanel::progressValue() const { return progress_->value(); }

}  // namespace strata::ui
