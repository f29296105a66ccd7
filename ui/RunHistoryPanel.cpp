#include "RunHistoryPanel.h"

#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

#include "RunHistory.h"

namespace strata::ui {

RunHistoryPanel::RunHistoryPanel(QWidget* parent) : QWidget(parent), list_(new QListWidget(this)), note_(new QLabel(this)) {
  auto* layout = new QVBoxLayout(this);
  list_->setObjectName("runList");
  note_->setWordWrap(true);
  auto* refresh_button = new QPushButton(tr("Refresh"), this);
  layout->addWidget(note_);
  layout->addWidget(list_, 1);
  layout->addWidget(refresh_button, 0, Qt::AlignLeft);
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
    }
  }
  filling_ = false;
}

int RunHistoryPanel::runCount() const { return list_->count(); }
QString RunHistoryPanel::runDir(int row) const { return list_->item(row)->data(Qt::UserRole).toString(); }
void RunHistoryPanel::setOverlay(int row, bool on) { list_->item(row)->setCheckState(on ? Qt::Checked : Qt::Unchecked); }

}  // namespace strata::ui
