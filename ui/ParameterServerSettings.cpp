#include "ParameterServerSettings.h"

#include <QCheckBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QRadioButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <limits>

namespace strata::ui {

ParameterServerSettings::ParameterServerSettings(QWidget* parent)
    : QWidget(parent),
      servers_(new QSpinBox(this)),
      unbounded_(new QCheckBox(tr("unbounded (fully asynchronous)"), this)),
      staleness_(new QSpinBox(this)),
      min_shard_bytes_(new QSpinBox(this)),
      in_process_(new QRadioButton(tr("in this process (worker threads)"), this)),
      processes_(new QRadioButton(tr("as processes with mpirun"), this)),
      note_(new QLabel(this)) {
  setObjectName("parameterServerSettings");
  servers_->setObjectName("psServers");
  unbounded_->setObjectName("psStalenessUnbounded");
  staleness_->setObjectName("psStaleness");
  min_shard_bytes_->setObjectName("psMinShardBytes");
  in_process_->setObjectName("psInProcess");
  processes_->setObjectName("psProcesses");
  servers_->setRange(1, 1024);
  servers_->setToolTip(tr("Parameter servers the variables are sharded over; each applies the updates to its own "
                          "share. With whole variables there can be no more servers than variables."));
  // The project format's limit (ProjectFile.cpp).
  staleness_->setRange(0, 1000000);
  staleness_->setPrefix(tr("k = "));
  staleness_->setToolTip(tr("A worker starts on round (global batch) t only once every round before t − k is fully "
                            "applied. 0 = synchronous: every worker reads weights with all earlier rounds applied."));
  unbounded_->setToolTip(tr("No bound: workers never wait for each other, and the staleness is whatever the "
                            "speed difference makes it"));
  // A QSpinBox holds an int: pieces of up to 2 GiB, far beyond any variable
  // worth splitting here. 0 keeps whole variables, dealt round-robin.
  min_shard_bytes_->setRange(0, std::numeric_limits<int>::max());
  min_shard_bytes_->setSingleStep(1024);
  min_shard_bytes_->setSuffix(tr(" bytes"));
  min_shard_bytes_->setSpecialValueText(tr("whole variables"));
  min_shard_bytes_->setToolTip(tr("Split variables into pieces of at least this many bytes spread over the servers; "
                                  "0 = whole variables, round-robin"));
  staleness_->setEnabled(!unbounded_->isChecked());

  auto* bound_row = new QHBoxLayout;
  bound_row->addWidget(staleness_);
  bound_row->addWidget(unbounded_, 1);
  in_process_->setChecked(true);
  in_process_->setToolTip(tr("Servers and workers are threads of the dashboard: a worker per device on the Devices tab"));
  processes_->setToolTip(tr("Servers and workers are strata-run processes started by mpirun (--enable-recovery, so a "
                            "lost worker does not end the job): ranks 0 … servers−1 serve, each other rank is one worker"));
  // Exclusive because they share a parent with no other radio buttons.
  auto* launch = new QVBoxLayout;
  launch->setSpacing(0);
  launch->addWidget(in_process_);
  launch->addWidget(processes_);
  note_->setWordWrap(true);
  note_->setStyleSheet("color: palette(mid);");
  auto* form = new QFormLayout(this);
  form->setContentsMargins(0, 0, 0, 0);
  form->addRow(new QLabel(tr("<b>Parameter servers</b>"), this));
  form->addRow(tr("Servers"), servers_);
  form->addRow(tr("Staleness bound"), bound_row);
  form->addRow(tr("Min shard size"), min_shard_bytes_);
  form->addRow(tr("Run"), launch);
  form->addRow(note_);
  auto update_note = [this] {
    note_->setText(acrossProcesses() ? tr("Workers: the worker processes below, one device each (the Devices tab).")
                                     : tr("Workers: one per device on the Devices tab."));
  };
  update_note();
  connect(processes_, &QRadioButton::toggled, this, [this, update_note](bool on) {
    update_note();
    Q_EMIT acrossProcessesChanged(on);
  });

  connect(unbounded_, &QCheckBox::toggled, this, [this](bool on) {
    staleness_->setEnabled(!on);
    Q_EMIT edited();
  });
  connect(servers_, &QSpinBox::valueChanged, this, &ParameterServerSettings::edited);
  connect(staleness_, &QSpinBox::valueChanged, this, &ParameterServerSettings::edited);
  connect(min_shard_bytes_, &QSpinBox::valueChanged, this, &ParameterServerSettings::edited);
}

void ParameterServerSettings::setProcessesUnavailableReason(const QString& reason) {
  if (!reason.isEmpty()) in_process_->setChecked(true);
  processes_->setEnabled(reason.isEmpty());
  if (!reason.isEmpty()) processes_->setToolTip(reason);
}

bool ParameterServerSettings::acrossProcesses() const { return processes_->isChecked(); }

void ParameterServerSettings::setAcrossProcesses(bool on) {
  if (on && !processes_->isEnabled()) return;
  (on ? processes_ : in_process_)->setChecked(true);
}

void ParameterServerSettings::setConfig(const StrategyConfig& c) {
  const QSignalBlocker b1(servers_), b2(unbounded_), b3(staleness_), b4(min_shard_bytes_);
  servers_->setValue(c.servers);
  unbounded_->setChecked(c.staleness < 0);
  // An unbounded project keeps the box at 0, what ticking "unbounded" off
  // most often means: synchronous.
  staleness_->setValue(std::max(0, c.staleness));
  staleness_->setEnabled(c.staleness >= 0);
  min_shard_bytes_->setValue(static_cast<int>(std::clamp<int64_t>(c.min_shard_bytes, 0, min_shard_bytes_->maximum())));
}

void ParameterServerSettings::applyTo(StrategyConfig& c) const {
  c.servers = servers_->value();
  c.staleness = unbounded_->isChecked() ? -1 : staleness_->value();
  c.min_shard_bytes = min_shard_bytes_->value();
}

}  // namespace strata::ui
