#pragma once
#include <QHash>
#include <QMainWindow>
#include <memory>

#include "train/Events.h"
#include "train/RunConfig.h"

class QAction;
class QMenu;
class QTabWidget;

namespace strata::ui {

class ChartsPanel;
class ConfigEditor;
class EvaluationView;
class LogPanel;
class MessagePresenter;
class RecentFiles;
class RunController;
class RunHistoryPanel;
class StatusPanel;
class TimelinePanel;
class TraceLoader;

// The `strata` window: assembles the panels, owns the project document
// (path, unsaved changes, recent files) and the Start / Pause / Stop
// actions. Each panel does its own work; this class only wires them.
class MainWindow : public QMainWindow {
  Q_OBJECT
public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Dialogs go through the presenter; tests install one that records.
  void setPresenter(std::unique_ptr<MessagePresenter> presenter);

  // Project operations; false when cancelled or failed (after telling the
  // user why). A failed open leaves the current project as it was.
  bool newProject();
  bool openProject(const QString& path);
  // An example shipped read-only: loaded as a new, unsaved project.
  bool openTemplate(const QString& path);
  bool saveProject();
  bool saveProjectAs(const QString& path);
  // Asks to save unsaved changes; false if the user cancelled.
  bool maybeSave();

  void startRun();
  void pauseRun();
  void resumeRun();
  void stopRun();
  // Continues a stopped or failed run of this project from its latest
  // checkpoint (the run's own configuration, in its folder).
  void resumeStoredRun(const QString& run_dir);
  // Opens the evaluation window on a run's checkpoints.
  void evaluateRun(const QString& run_dir);
  // Shows the Timeline tab and reads a trace file (trace.json of a run, or a
  // merged multi-rank trace) into it off the window's thread; when it cannot
  // be read the user is told why and the tab keeps what it showed.
  void openTrace(const QString& path);
  bool readingTrace() const;

  QString projectPath() const { return path_; }
  bool isModified() const { return modified_; }
  RunConfig currentConfig() const;

  ConfigEditor* configEditor() const { return editor_; }
  ChartsPanel* charts() const { return charts_; }
  StatusPanel* statusPanel() const { return status_; }
  LogPanel* logPanel() const { return log_; }
  RunHistoryPanel* historyPanel() const { return history_; }
  TimelinePanel* timelinePanel() const { return timeline_; }
  RunController* runController() const { return run_; }
  EvaluationView* evaluationView() const { return evaluation_; }

protected:
  void closeEvent(QCloseEvent* event) override;

private:
  void buildActions();
  void setDocument(const RunConfig& config, const QString& path);
  void setModified(bool modified);
  void updateTitle();
  void updateRunActions();
  void onFinished(const FinishedEvent& event);
  void onOverlay(const QString& run_dir, bool on);
  void chooseAndOpen();
  void chooseAndOpenTrace();
  bool chooseAndSave();

  std::unique_ptr<MessagePresenter> presenter_;
  ConfigEditor* editor_;
  ChartsPanel* charts_;
  StatusPanel* status_;
  LogPanel* log_;
  RunHistoryPanel* history_;
  QTabWidget* bottom_tabs_;
  TimelinePanel* timeline_;
  TraceLoader* trace_loader_;
  RunController* run_;
  EvaluationView* evaluation_;
  RecentFiles* recent_;
  QMenu* recent_menu_ = nullptr;
  QAction *new_ = nullptr, *open_ = nullptr, *save_ = nullptr, *save_as_ = nullptr;
  QAction *start_ = nullptr, *pause_ = nullptr, *stop_ = nullptr;
  QString path_;
  QString name_;
  bool modified_ = false;
  // Overlaid runs' legend labels by run folder (the run's name when it has
  // one), so an overlay is removed by the label it was added under.
  QHash<QString, QString> overlay_labels_;
};

}  // namespace strata::ui
