#pragma once
#include <QWidget>
#include <string>

class QListWidget;
class QListWidgetItem;
class QLabel;

namespace strata::ui {

// The project's previous runs (its "<stem>.runs" folder), newest first.
// Checking a run overlays it on the charts for comparison.
class RunHistoryPanel : public QWidget {
  Q_OBJECT
public:
  explicit RunHistoryPanel(QWidget* parent = nullptr);
  // Lists the runs of a project file; empty path = unsaved project.
  void setProject(const QString& project_path);
  void refresh();
  int runCount() const;
  QString runDir(int row) const;
  void setOverlay(int row, bool on);

signals:
  void overlayToggled(const QString& run_dir, bool on);

private:
  QListWidget* list_;
  QLabel* note_;
  QString project_;
  bool filling_ = false;
};

}  // namespace strata::ui
