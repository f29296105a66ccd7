#pragma once
#include <QDialog>

#include "SettingsDiff.h"

class QCheckBox;
class QTableWidget;

namespace strata::ui {

// Two runs' settings side by side, the differing rows marked (bold, tinted)
// and, by default, the only ones shown.
class SettingsDiffDialog : public QDialog {
  Q_OBJECT
public:
  SettingsDiffDialog(const QString& a_name, const QString& b_name, std::vector<SettingRow> rows, QWidget* parent = nullptr);
  QTableWidget* table() const { return table_; }
  QCheckBox* onlyDifferencesBox() const { return only_; }
  int differenceCount() const;

private:
  void fill();
  std::vector<SettingRow> rows_;
  QTableWidget* table_;
  QCheckBox* only_;
};

}  // namespace strata::ui
