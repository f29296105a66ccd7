#pragma once
#include <QWidget>
#include <vector>

#include "ChartView.h"
#include "RunSeries.h"
#include "train/Events.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSlider;

namespace strata::ui {

// The three live charts (loss per replica with the reduced loss bold on
// top, accuracy per epoch, throughput) and the controls they share: x axis,
// smoothing, log scale, reset, export. Receives the engine's events in the
// batches the bridge delivers and replots once per batch.
class ChartsPanel : public QWidget {
  Q_OBJECT
public:
  explicit ChartsPanel(QWidget* parent = nullptr);
  // Clears the live run's series (overlays stay) and creates one series per
  // replica, then the reduced loss.
  void beginRun(const RunStartedEvent& e);
  void addEvents(const std::vector<Event>& batch);
  // A stored run drawn dashed beside the live one; label keys removal.
  void addOverlay(const RunSeries& run, const QString& label);
  void removeOverlay(const QString& label);
  void clearAll();

  void setXMode(XAxisMode mode);
  void setSmoothing(double weight);
  void setLogScale(bool on);
  void resetViews();

  ChartView* lossChart() const { return loss_; }
  ChartView* accuracyChart() const { return accuracy_; }
  ChartView* throughputChart() const { return throughput_; }
  const RunSeries& liveRun() const { return live_; }

private:
  void addStep(const StepEvent& s);
  void addEpoch(const EpochEvent& e);
  void flushAll();

  ChartView *loss_, *accuracy_, *throughput_;
  QComboBox* x_mode_;
  QSlider* smoothing_;
  QLabel* smoothing_label_;
  QCheckBox* log_;
  RunSeries live_;
  std::vector<int> replica_series_;
  int reduced_ = -1, val_loss_ = -1, train_acc_ = -1, val_acc_ = -1, speed_ = -1;
  int overlays_ = 0;
};

}  // namespace strata::ui
