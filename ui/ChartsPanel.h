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

class ParameterServerCharts;

// The live charts (loss per replica with the reduced loss bold on top,
// accuracy per epoch, throughput, each worker's compute time per step so
// stragglers stand out; for a parameter-server run also staleness and
// server update rates, see ParameterServerCharts) and the controls they
// share: x axis, smoothing, log scale, reset, export. Receives the engine's
// events in the batches the bridge delivers and replots once per batch.
class ChartsPanel : public QWidget {
  Q_OBJECT
public:
  explicit ChartsPanel(QWidget* parent = nullptr);
  // Clears the live run's series (overlays stay) and creates one series per
  // replica, then the reduced loss.
  void beginRun(const RunStartedEvent& e);
  void addEvents(const std::vector<Event>& batch);
  // Events drawn right after the next run_started, before its own steps: a
  // resumed run's history up to its checkpoint, so the charts continue.
  void setPrelude(std::vector<Event> events) { prelude_ = std::move(events); }
  // A stored run drawn dashed beside the live one; label keys removal.
  void addOverlay(const RunSeries& run, const QString& label);
  void removeOverlay(const QString& label);
  void clearAll();

  void setXMode(XAxisMode mode);
  void setSmoothing(double weight);
  void setLogScale(bool on);
  void resetViews();

  ChartView* lossChart() const { return loss_; }
  // Milliseconds the charts' latest replots took together.
  double lastReplotMs() const;
  ChartView* accuracyChart() const { return accuracy_; }
  ChartView* throughputChart() const { return throughput_; }
  ChartView* workerChart() const { return workers_; }
  // Every chart, the parameter-server ones included.
  std::vector<ChartView*> charts() const;
  ChartView* stalenessChart() const;
  ChartView* serverUpdatesChart() const;
  ParameterServerCharts* parameterServerCharts() const { return ps_; }
  const RunSeries& liveRun() const { return live_; }

private:
  void addStep(const StepEvent& s);
  void addEpoch(const EpochEvent& e);
  void flushAll();
  void addEventToLive(const Event& ev);
  // The step-time chart's series for worker w or replica r, made on first use.
  int workerTimeSeries(size_t w);
  int replicaTimeSeries(size_t r);
  int timeSeries(std::vector<int>& cache, size_t i, const QString& name);
  // "replica r", or "worker r" in a parameter-server run (one replica a worker).
  QString replicaSeriesName(size_t r) const;

  ChartView *loss_, *accuracy_, *throughput_, *workers_;
  ParameterServerCharts* ps_;  // after loss_: it draws on the loss chart
  QComboBox* x_mode_;
  QSlider* smoothing_;
  QLabel* smoothing_label_;
  QCheckBox* log_;
  RunSeries live_;
  std::vector<int> replica_series_;
  std::vector<int> worker_times_, replica_times_;
  // In-process replicas (more than one per worker): the step-time chart
  // shows each replica, so a slow one among a worker's shows too.
  bool times_per_replica_ = false;
  std::vector<Event> prelude_;
  int reduced_ = -1, val_loss_ = -1, train_acc_ = -1, val_acc_ = -1, speed_ = -1;
  int overlays_ = 0;
  int best_marker_ = -1;  // the accuracy chart's "best" marker, once there is a best epoch
};

}  // namespace strata::ui
