#pragma once
#include <QWidget>
#include <string>

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTableWidget;
class QTableWidgetItem;

namespace strata::ui {

class SettingsDiffDialog;

// The project's previous runs (its "<stem>.runs" folder) as a sortable
// table: name (editable, checked to overlay the run on the charts), start,
// status, strategy, hyper-parameters, final and best figures, tags
// (editable); the selected run's notes below. The selected run can be
// resumed (stopped or failed, with a checkpoint) or its checkpoints
// evaluated; two selected runs' settings compared side by side. Names,
// notes and tags are kept in each run's run.json.
class RunHistoryPanel : public QWidget {
  Q_OBJECT
public:
  enum Column { Name, Started, Status, Strategy, Epochs, Steps, Batch, Optimizer, LearningRate, Schedule, Loss, ValAccuracy,
                BestValAccuracy, Tags, ColumnCount };

  explicit RunHistoryPanel(QWidget* parent = nullptr);
  // Lists the runs of a project file; empty path = unsaved project.
  void setProject(const QString& project_path);
  void refresh();
  int runCount() const;
  int newestRow() const;  // -1 without runs
  // Rows are in the table's current order (newest first until sorted otherwise).
  QString runDir(int row) const;
  void setOverlay(int row, bool on);
  void setCurrentRun(int row);
  QString currentRunDir() const;
  bool canResume(int row) const;
  // No resume while a run is going (one run at a time).
  void setRunning(bool running);
  QPushButton* resumeButton() const { return resume_; }
  QPushButton* evaluateButton() const { return evaluate_; }
  QPushButton* timelineButton() const { return timeline_; }
  QPushButton* compareButton() const { return compare_; }
  QTableWidget* table() const { return table_; }
  QPlainTextEdit* notesEdit() const { return notes_; }
  // The settings comparison last opened (null before the first).
  SettingsDiffDialog* comparison() const { return comparison_; }

signals:
  void overlayToggled(const QString& run_dir, bool on);
  void resumeRequested(const QString& run_dir);
  void evaluateRequested(const QString& run_dir);
  // The selected run's trace.json, for the Timeline tab.
  void timelineRequested(const QString& trace_file);
  // A run.json that could not be read or written.
  void problem(const QString& title, const QString& message);

protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

private:
  void updateButtons();
  void onItemChanged(QTableWidgetItem* item);
  void showNotesOf(const QString& run_dir);
  void saveNotes();
  void compareSelected();
  // Reads, changes and writes one run's run.json; false (and a problem
  // reported) when it cannot.
  template <typename Change>
  bool editNotes(const QString& run_dir, Change change);

  QTableWidget* table_;
  QLabel* note_;
  QLabel* notes_label_;
  QPlainTextEdit* notes_;
  QString notes_dir_;  // the run whose notes the editor holds
  QPushButton* resume_;
  QPushButton* evaluate_;
  QPushButton* timeline_;
  QPushButton* compare_;
  SettingsDiffDialog* comparison_ = nullptr;
  QString project_;
  bool filling_ = false;
  bool running_ = false;
};

}  // namespace strata::ui
