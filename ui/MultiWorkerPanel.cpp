#include "MultiWorkerPanel.h"

#include <QCheckBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

#include "Wording.h"

namespace strata::ui {

MultiWorkerPanel::MultiWorkerPanel(QWidget* parent)
    : QWidget(parent),
      processes_(new QSpinBox(this)),
      hosts_(new QLineEdit(this)),
      hostfile_(new QLineEdit(this)),
      oversubscribe_(new QCheckBox(tr("Allow more processes than cores (--oversubscribe)"), this)),
      title_(new QLabel(this)),
      note_(new QLabel(this)) {
  setObjectName("multiWorkerPanel");
  processes_->setObjectName("workerProcesses");
  hosts_->setObjectName("workerHosts");
  hostfile_->setObjectName("workerHostfile");
  processes_->setRange(1, 4096);
  processes_->setValue(2);
  hosts_->setPlaceholderText(tr("this machine (e.g. node1:2,node2:2)"));
  hosts_->setToolTip(tr("mpirun --host: host:slots, comma-separated. The hosts need passwordless ssh, "
                        "the same strata-run path and the data set at the same path"));
  hostfile_->setPlaceholderText(tr("none (overrides the hosts)"));
  oversubscribe_->setChecked(true);
  auto* browse = new QPushButton(tr("…"), this);
  browse->setMaximumWidth(32);
  auto* file_row = new QHBoxLayout;
  file_row->addWidget(hostfile_, 1);
  file_row->addWidget(browse);
  note_->setWordWrap(true);
  note_->setStyleSheet("color: palette(mid);");
  auto* form = new QFormLayout(this);
  form->setContentsMargins(0, 0, 0, 0);
  form->addRow(title_);
  form->addRow(tr("Processes"), processes_);
  form->addRow(tr("Hosts"), hosts_);
  form->addRow(tr("Hostfile"), file_row);
  form->addRow(oversubscribe_);
  form->addRow(note_);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Hostfile"));
    if (!f.isEmpty()) hostfile_->setText(f);
  });
  setParameterServers(0);
  connect(processes_, &QSpinBox::valueChanged, this, [this] {
    setParameterServers(servers_);  // the rank count in the note
    Q_EMIT edited();
  });
  connect(hosts_, &QLineEdit::textEdited, this, &MultiWorkerPanel::edited);
  connect(hostfile_, &QLineEdit::textChanged, this, &MultiWorkerPanel::edited);
  connect(oversubscribe_, &QCheckBox::toggled, this, &MultiWorkerPanel::edited);
}

void MultiWorkerPanel::setParameterServers(int servers) {
  servers_ = servers;
  const QString no_pause = tr("Pause is not available: the ranks run in other processes.");
  if (servers_ <= 0) {
    title_->setText(tr("<b>Workers (mpirun)</b>"));
    processes_->setToolTip(tr("Worker processes in all (mpirun -np); each runs a replica per selected device"));
    note_->setText(tr("Devices per worker: the Devices tab. %1").arg(no_pause));
    return;
  }
  const int workers = processes_->value();
  title_->setText(tr("<b>Worker processes (mpirun)</b>"));
  processes_->setToolTip(tr("Worker processes, one device each; mpirun -np is the servers plus the workers"));
  note_->setText(tr("mpirun starts %1: %2, then %3, with --enable-recovery so a lost "
                    "worker does not end the run. Each worker's device: the Devices tab. %4")
                     .arg(counted(servers_ + workers, tr("rank"), tr("ranks")),
                          counted(servers_, tr("server"), tr("servers")), counted(workers, tr("worker"), tr("workers")),
                          no_pause));
}

QString MultiWorkerPanel::noteText() const { return note_->text(); }

MultiWorkerOptions MultiWorkerPanel::options() const {
  MultiWorkerOptions o;
  o.processes = processes_->value();
  o.hosts = hosts_->text().trimmed();
  o.hostfile = hostfile_->text().trimmed();
  o.oversubscribe = oversubscribe_->isChecked();
  return o;
}

void MultiWorkerPanel::setOptions(const MultiWorkerOptions& o) {
  processes_->setValue(o.processes);
  hosts_->setText(o.hosts);
  hostfile_->setText(o.hostfile);
  oversubscribe_->setChecked(o.oversubscribe);
}

}  // namespace strata::ui
