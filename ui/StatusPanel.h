#pragma once
#include <QWidget>

#include "train/Events.h"

class QLabel;
class QProgressBar;
class QTableWidget;

namespace strata::ui {

// The run's progress: a bar with epoch, step and ETA, samples/s, the
// strategy line, per-device statistics when the engine sends them, and the
// final status (divergence in red).
class StatusPanel : public QWidget {
  Q_OBJECT
public:
  explicit StatusPanel(QWidget* parent = nullptr);
  void reset();
  void onStarted(const RunStartedEvent& e);
  void onStep(const StepEvent& e);
  void onDeviceStats(const DeviceStatsEvent& e);
  void onFinished(const FinishedEvent& e);
  void setPaused(bool paused);
  QString statusText() const;
  QString progressText() const;
  int progressValue() const;
  // "2 workers: hostA (rank 0), hostA (rank 1)"; empty before a run starts.
  QString workersText() const;

private:
  // "epoch 3/12 · step 250/1000": where the run is (the last step event).
  QString positionText() const;
  QLabel* run_line_;
  QLabel* workers_;
  QProgressBar* progress_;
  QLabel* speed_;
  QLabel* status_;
  QTableWidget* devices_;
  int64_t total_steps_ = 0;
  int epochs_ = 0;
  int last_epoch_ = 0;     // of the last step event
  int64_t last_step_ = 0;
  int64_t steps_per_epoch_ = 0;
};

}  // namespace strata::ui
