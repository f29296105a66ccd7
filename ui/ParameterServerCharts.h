#pragma once
#include <QWidget>
#include <optional>
#include <vector>

#include "ChartView.h"
#include "train/Events.h"

namespace strata::ui {

struct RunSeries;

// What only a parameter-server run shows: the staleness of the gradients
// each step applied, with the bound as a dashed line; each server's update
// rate; and, on the loss chart (ChartsPanel's), each worker's finished steps
// in its legend entry, a lost worker greyed and dashed with "(lost)" and a
// vertical line at the step that first reported it. Hidden for the other
// strategies. Kept apart from ChartsPanel so the panel stays about the
// charts every run has.
class ParameterServerCharts : public QWidget {
  Q_OBJECT
public:
  // `loss` is the panel's loss chart, where the workers' series live.
  explicit ParameterServerCharts(ChartView* loss, QWidget* parent = nullptr);
  // The loss chart's series of worker w (ChartsPanel creates it; the name
  // is its key, the legend text changes as the run goes).
  static QString workerSeriesName(size_t w);

  // Drops the previous live run's series and markers; a run with servers
  // gets its series and shows the charts.
  void beginRun(const RunStartedEvent& e);
  void addStep(const StepEvent& s, const XPoint& x);
  // Whether worker w's loss and step time in the step just added are drawn.
  // Not before the worker finished a slice: the engine reports 0 for it
  // until then, and a 0 loss would read as a perfect fit. Not once it is
  // lost: the engine repeats its last figures, which no longer move.
  bool drawsWorker(size_t w) const;
  // The legend texts, once per batch rather than per step.
  void refreshLegend();
  // A stored parameter-server run's staleness, dashed beside the live one.
  void addOverlay(const RunSeries& run, const QString& label, ChartView::Style style);
  void removeOverlay(const QString& label);
  void clear();

  bool active() const { return active_; }
  bool workerLost(size_t w) const { return w < workers_.size() && workers_[w].lost; }
  ChartView* stalenessChart() const { return staleness_; }
  ChartView* serverChart() const { return servers_; }

private:
  struct Worker {
    bool has_loss = false;  // has finished a slice whose loss was reported
    bool lost = false;
    int64_t steps = 0;      // slices finished
    ChartView::Style style;  // its loss series' style before it was lost
  };
  void setLost(size_t w, bool lost, const XPoint& x, int64_t step);
  void updateVisibility();
  void reindex();

  ChartView* loss_;
  ChartView* staleness_;
  ChartView* servers_;
  bool active_ = false;
  std::optional<int> bound_;
  int staleness_series_ = -1, bound_series_ = -1;
  std::vector<int> server_series_;
  std::vector<Worker> workers_;
  std::vector<QString> overlays_;
};

}  // namespace strata::ui
