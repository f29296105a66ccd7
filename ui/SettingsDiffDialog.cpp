#include "SettingsDiffDialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QShortcut>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

#include "Wording.h"

namespace strata::ui {

SettingsDiffDialog::SettingsDiffDialog(const QString& a_name, const QString& b_name, std::vector<SettingRow> rows,
                                       QWidget* parent)
    : QDialog(parent), rows_(std::move(rows)), table_(new QTableWidget(this)), only_(new QCheckBox(tr("Only the differences"), this)) {
  setWindowTitle(tr("Settings: %1 vs %2").arg(a_name, b_name));
  setObjectName("settingsDiff");
  auto* layout = new QVBoxLayout(this);
  const int n = differenceCount();
  layout->addWidget(
      new QLabel(n == 0 ? tr("The two runs have the same settings.")
                        : tr("%1 %2, marked in bold.")
                              .arg(counted(n, tr("setting"), tr("settings")), n == 1 ? tr("differs") : tr("differ")),
                 this));
  only_->setObjectName("onlyDifferences");
  only_->setChecked(n > 0);
  layout->addWidget(only_);
  table_->setColumnCount(3);
  table_->setHorizontalHeaderLabels({tr("Setting"), a_name, b_name});
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  layout->addWidget(table_, 1);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  new QShortcut(QKeySequence::Close, this, [this] { close(); });
  connect(only_, &QCheckBox::toggled, this, &SettingsDiffDialog::fill);
  fill();
  resize(760, 520);
  table_->setColumnWidth(0, 280);
  table_->setColumnWidth(1, 220);
}

int SettingsDiffDialog::differenceCount() const {
  return static_cast<int>(std::count_if(rows_.begin(), rows_.end(), [](const SettingRow& r) { return r.differs; }));
}

void SettingsDiffDialog::fill() {
  table_->setRowCount(0);
  for (const SettingRow& r : rows_) {
    if (only_->isChecked() && !r.differs) continue;
    const int row = table_->rowCount();
    table_->insertRow(row);
    const QString cells[3] = {QString::fromStdString(r.path), r.a.empty() ? tr("(not set)") : QString::fromStdString(r.a),
                              r.b.empty() ? tr("(not set)") : QString::fromStdString(r.b)};
    for (int c = 0; c < 3; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setToolTip(cells[c]);
      if (r.differs) {
        QFont f = item->font();
        f.setBold(true);
        item->setFont(f);
        item->setBackground(QColor(255, 244, 200));
      }
      table_->setItem(row, c, item);
    }
  }
}

}  // namespace strata::ui
