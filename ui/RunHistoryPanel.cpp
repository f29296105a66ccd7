#include "RunHistoryPanel.h"

#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QHBoxLayout>
#include <QVBoxLayout>

#include "RunHistory.h"

namespace strata::ui {

RunHistoryPanel::RunHistoryPanel(QWidget* parent) : QWidget(parent), list_(new QListWidget(this)), note_(new QLabel(this)) {
  auto* layout = new QVBoxLayout(this);
  list_->setObjectName("runList");
  note_->setWordWrap(true);
  auto* refresh_button = new QPushButton(tr("Refresh"), this);
  resume_ = new QPushButton(tr("Resume"), this);
  resume_->setObjectName("resumeRun");
  evaluate_ = new QPushButton(tr("Evaluate…"), this);
  evaluate_->setObjectName("evaluateRun");
  evaluate_->setToolTip(tr("Confusion matrix, per-class accuracy and test samples for a checkpoint of the selected run; "
                           "export its weights"));
  layout->addWidget(note_);
  layout->addWidget(list_, 1);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(refresh_button);
  buttons->addWidget(resume_);
  buttons->addWidget(evaluate_);
  buttons->addStretch();
  layout->addLayout(buttons);
  connect(list_, &QListWidget::currentRowChanged, this, &RunHistoryPanel::updateButtons);
  connect(resume_, &QPushButton::clicked, this, [this] {
    if (canResume(list_->currentRow())) Q_EMIT resumeRequested(currentRunDir());
  });
  connect(evaluate_, &QPushButton::clicked, this, [this] {
    if (!currentRunDir().isEmpty()) Q_EMIT evaluateRequested(currentRunDir());
  });
  connect(refresh_button, &QPushButton::clicked, this, &RunHistoryPanel::refresh);
  connect(list_, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
    if (!filling_) Q_EMIT overlayToggled(item->data(Qt::UserRole).toString(), item->checkState() == Qt::Checked);
  });
  refresh();
}

void RunHistoryPanel::setProject(const QString& project_path) {
  project_ = project_path;
  refresh();
}

void RunHistoryPanel::refresh() {
  // Overlays stay on across a refresh (a finished run is added at the top).
  QStringList checked;
  const QString current = currentRunDir();
  for (int i = 0; i < list_->count(); ++i)
    if (list_->item(i)->checkState() == Qt::Checked) checked << list_->item(i)->data(Qt::UserRole).toString();
  filling_ = true;
  list_->clear();
  if (project_.isEmpty()) {
    note_->setText(tr("Save the project to keep its runs: they are stored beside the project file."));
  } else {
    const auto runs = list_runs(project_.toStdString());
    note_->setText(runs.empty() ? tr("No runs yet. Runs are stored in %1.").arg(QString::fromStdString(runs_folder_for(project_.toStdString())))
                                : tr("Check a run to overlay it on the charts."));
    for (const auto& r : runs) {
      auto* item = new QListWidgetItem(QString::fromStdString(r.name + "   " + r.summary), list_);
      const QString dir = QString::fromStdString(r.dir);
      item->setData(Qt::UserRole, dir);
      item->setToolTip(dir);
      item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable | Qt::ItemIsSelectable);
      item->setCheckState(checked.contains(dir) ? Qt::Checked : Qt::Unchecked);
      item->setData(Qt::UserRole + 1, r.resumable());
      item->setData(Qt::UserRole + 2, r.has_checkpoint);
      if (dir == current) list_->setCurrentItem(item);
    }
  }
  filling_ = false;
  updateButtons();
}

void RunHistoryPanel::updateButtons() {
  const int row = list_->currentRow();
  const bool any = row >= 0;
  resume_->setEnabled(!running_ && canResume(row));
  resume_->setToolTip(!any ? tr("Select a run to resume")
                      : canResume(row) ? tr("Continue this run from its latest checkpoint, in the same run folder")
                                       : tr("Only a stopped or failed run with a checkpoint can be resumed"));
  evaluate_->setEnabled(any && list_->item(row)->data(Qt::UserRole + 2).toBool());
}

void RunHistoryPanel::setRunning(bool running) {
  running_ = running;
  updateButtons();
}

void RunHistoryPanel::setCurrentRun(int row) { list_->setCurrentRow(row); }
QString RunHistoryPanel::currentRunDir() const {
  return list_->currentItem() ? list_->currentItem()->data(Qt::UserRole).toString() : QString();
}
bool RunHistoryPanel::canResume(int row) const {
  return row >= 0 && row < list_->count() && list_->item(row)->data(Qt::UserRole + 1).toBool();
}

int RunHistoryPanel::runCount() const { return list_->count(); }
QString RunHistoryPanel::runDir(int row) const { return list_->item(row)->data(Qt::UserRole).toString(); }
void RunHistoryPanel::setOverlay(int row, bool on) { list_->item(row)->setCheckState(on ? Qt::Checked : Qt::Unchecked); }

}  // namespace strata::ui
