#include "DevicesPanel.h"

#include "Wording.h"

#include <QLabel>
#include <QListWidget>
#include <QVBoxLayout>

#include "core/Device.h"
#include "distribute/Strategy.h"

namespace strata::ui {

DevicesPanel::DevicesPanel(QWidget* parent)
    : QWidget(parent), list_(new QListWidget(this)), notes_(new QLabel(this)), summary_(new QLabel(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("<b>Replica devices</b>"), this));
  list_->setObjectName("deviceList");
  // A long model name is shortened in its middle rather than scrolled
  // sideways; the whole line, with a GPU's capability, driver and peer
  // access, is the item's tooltip.
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  list_->setTextElideMode(Qt::ElideMiddle);
  layout->addWidget(list_, 1);
  const GpuInventory gpus = gpu_inventory();
  std::string sim_problem;  // a bad STRATA_SIM_DEVICES: said below the list, not thrown from the window
  const auto devices = list_devices(gpus, &sim_problem);
  int cpus = 0;
  for (const auto& d : devices) {
    auto* item = new QListWidgetItem(list_);
    const double gib = static_cast<double>(d.memory_bytes) / (1 << 30);
    item->setText(QStringLiteral("%1   %2 · %3 GiB %4")
                      .arg(QString::fromStdString(d.device.str()), QString::fromStdString(d.name))
                      .arg(gib, 0, 'f', 1)
                      .arg(d.device.kind == DeviceKind::Gpu ? tr("device memory") : tr("host memory")));
    item->setToolTip(d.detail.empty() ? item->text() : item->text() + "\n" + QString::fromStdString(d.detail));
    item->setData(Qt::UserRole, QString::fromStdString(d.device.str()));
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
    item->setCheckState(Qt::Unchecked);
    if (d.device.kind == DeviceKind::Cpu) ++cpus;
  }
  // The engine accepts more logical CPU devices than cores; they share cores,
  // which is slower but lets a 2-core laptop rehearse a 4-replica run.
  for (int i = cpus; i < logical_cpu_device_count(); ++i) {
    auto* item = new QListWidgetItem(list_);
    const QString name = QStringLiteral("cpu:%1").arg(i);
    item->setText(tr("%1   logical CPU device (shares cores with the others)").arg(name));
    item->setToolTip(item->text());
    item->setData(Qt::UserRole, name);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
    item->setCheckState(Qt::Unchecked);
    item->setForeground(QColor(110, 110, 110));
  }
  QStringList notes;
  if (gpus.gpus.empty()) notes << tr("No GPU: %1.").arg(QString::fromStdString(gpus.unavailable));
  if (!sim_problem.empty()) notes << QString::fromStdString(sim_problem) + ".";
  notes_->setObjectName("deviceNotes");
  notes_->setText(notes.join('\n'));
  notes_->setVisible(!notes.isEmpty());
  // The reason can be a sentence ("this build has no CUDA backend (rebuild
  // ...)"): unwrapped, it widened the whole Strategy page past the window.
  notes_->setWordWrap(true);
  notes_->setStyleSheet("color: palette(mid);");
  layout->addWidget(notes_);
  summary_->setObjectName("replicaSummary");
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  connect(list_, &QListWidget::itemChanged, this, &DevicesPanel::onItemChanged);
  updateSummary();
}

QStringList DevicesPanel::selectedDevices() const {
  QStringList out;
  for (int i = 0; i < list_->count(); ++i)
    if (list_->item(i)->checkState() == Qt::Checked) out << list_->item(i)->data(Qt::UserRole).toString();
  return out;
}

void DevicesPanel::setSelectedDevices(const QStringList& devices) {
  updating_ = true;
  for (int i = 0; i < list_->count(); ++i) {
    auto* item = list_->item(i);
    item->setCheckState(devices.contains(item->data(Qt::UserRole).toString()) ? Qt::Checked : Qt::Unchecked);
  }
  updating_ = false;
  updateSummary();
}

void DevicesPanel::onItemChanged(QListWidgetItem* item) {
  if (updating_) return;
  // OneDevice has exactly one replica (a parameter-server worker process
  // one device): checking a device moves the choice.
  if (singleDevice() && item->checkState() == Qt::Checked) {
    updating_ = true;
    for (int i = 0; i < list_->count(); ++i)
      if (list_->item(i) != item) list_->item(i)->setCheckState(Qt::Unchecked);
    updating_ = false;
  }
  updateSummary();
  Q_EMIT edited();
}

void DevicesPanel::setStrategy(const QString& name) {
  strategy_ = name;
  QStringList selected = selectedDevices();
  if (singleDevice() && selected.size() > 1) setSelectedDevices({selected.front()});
  else if (selected.isEmpty()) setSelectedDevices(singleDevice() ? QStringList{"cpu:0"} : QStringList{"cpu:0", "cpu:1"});
  updateSummary();
}

void DevicesPanel::setParameterServerProcesses(bool on) {
  ps_processes_ = on;
  const QStringList selected = selectedDevices();
  if (singleDevice() && selected.size() > 1) {
    // The user's switch, and the project's device list changes with it.
    setSelectedDevices({selected.front()});
    Q_EMIT edited();
  }
  updateSummary();
}

bool DevicesPanel::singleDevice() const {
  return strategy_ == "one_device" || (strategy_ == "parameter_server" && ps_processes_);
}

void DevicesPanel::setGlobalBatch(qint64 batch) {
  global_batch_ = batch;
  updateSummary();
}

QString DevicesPanel::summary() const { return summary_->text(); }

void DevicesPanel::updateSummary() {
  const QStringList selected = selectedDevices();
  const auto n = static_cast<qint64>(selected.size());
  if (n == 0) {
    summary_->setText(tr("<span style='color:#b00'>Select at least one device.</span>"));
    return;
  }
  if (strategy_ == "parameter_server" && ps_processes_) {
    // The worker count and so the batch split are the strategy panel's.
    summary_->setText(n == 1 ? tr("Each worker process trains on %1.").arg(selected.front())
                             : tr("<span style='color:#b00'>A worker process trains on one device; %1 are selected.</span>")
                                   .arg(n));
    return;
  }
  // A parameter-server run has a worker per device (each a replica).
  QString text = (strategy_ == "parameter_server" ? counted(n, tr("worker"), tr("workers"))
                                                  : counted(n, tr("replica"), tr("replicas"))) +
                 ": " + selected.join(", ");
  if (global_batch_ > 0) {
    if (global_batch_ < n) {
      text += tr("<br><span style='color:#b00'>Global batch %1 is smaller than the replica count.</span>").arg(global_batch_);
    } else {
      // Same split as the engine: the first (batch % n) replicas take one more.
      QStringList parts;
      for (qint64 r = 0; r < n; ++r) parts << QString::number(global_batch_ / n + (r < global_batch_ % n ? 1 : 0));
      text += tr("<br>Global batch %1 → per replica %2").arg(global_batch_).arg(parts.join(" + "));
    }
  }
  summary_->setText(text);
}

void DevicesPanel::setConfig(const RunConfig& config) {
  strategy_ = QString::fromStdString(config.strategy.name);
  QStringList devices;
  for (const auto& d : config.strategy.devices) devices << QString::fromStdString(d);
  if (devices.isEmpty())  // the engine's defaults, made visible
    devices = strategy_ == "one_device" ? QStringList{"cpu:0"} : QStringList{"cpu:0", "cpu:1"};
  setSelectedDevices(devices);
}

void DevicesPanel::applyTo(RunConfig& config) const {
  config.strategy.devices.clear();
  for (const auto& d : selectedDevices()) config.strategy.devices.push_back(d.toStdString());
}

}  // namespace strata::ui
