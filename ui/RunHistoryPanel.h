#pragma once
#include <QWidget>
#include <string>

class QListWidget;
class QListWidgetItem;
class QLabel;
class QPushButton;

namespace strata::ui {

// The project's previous runs (its "<stem>.runs" folder), newest first.
// Checking a run overlays it on the charts for comparison; the selected run
// can be resumed (stopped or failed, with a checkpoint) or its checkpoints
// evaluated.
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
  void setCurrentRun(int row);
  QString currentRunDir() const;
  bool canResume(int row) const;
  // No resume while a run is going (one run at a time).
  void setRunning(bool running);
  QPushButton* resumeButton() const { return resume_; }
  QPushButton* evaluateButton() const { return evaluate_; }

signals:
  void overlayToggled(const QString& run_dir, bool on);
  void resumeRequested(const QString& run_dir);
  void evaluateRequested(const QString& run_dir);

private:
  QListWidget* list_;
  QLabel* note_;
  QPushButton* resume_;
  QPushButton* evaluate_;
  QString project_;
  bool filling_ = false;
  bool running_ = false;
  void updateButtons();
};

}  // namespace strata::ui
