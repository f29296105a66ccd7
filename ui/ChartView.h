#pragma once
#include <QColor>
#include <QWidget>
#include <memory>
#include <span>
#include <vector>

#include "Smoothing.h"

class QCustomPlot;
class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;
class QCPAbstractLegendItem;
class QCPLegend;
class QMouseEvent;

namespace strata::ui {

enum class XAxisMode { Step = 0, Epoch = 1, Time = 2 };

// Where a point sits on each of the three x axes; the chart keeps all three
// so switching the axis never needs the events again.
struct XPoint {
  double step = 0, epoch = 0, time = 0;
};

// One QCustomPlot with everything the dashboard's charts share: series kept
// as columns and appended in sorted batches, TensorBoard-style smoothing with
// the raw line faint behind, log scale, mouse zoom/pan with reset, a
// crosshair that reads out every series, legend clicks that hide series,
// divergence markers and PNG/PDF/CSV export.
class ChartView : public QWidget {
  Q_OBJECT
public:
  struct Style {
    QColor color = Qt::black;
    double width = 1.5;
    Qt::PenStyle pen = Qt::SolidLine;
    bool points = false;      // draw a circle at every point (per-epoch series)
    bool smoothable = true;   // smoothing applies (per-step series)
    bool on_top = false;      // drawn above every other series (the reduced loss)
  };

  ChartView(const QString& title, const QString& y_label, QWidget* parent = nullptr);
  ~ChartView() override;

  int addSeries(const QString& name, const Style& style);
  // Removes series whose name starts with `prefix` (run overlays).
  void removeSeries(const QString& prefix);
  void clear();
  // Points must arrive in increasing x; they reach the plot at flush().
  void append(int series, const XPoint& x, double y);
  void appendMany(int series, std::span<const double> step, std::span<const double> epoch,
                  std::span<const double> time, std::span<const double> y);
  // Hands new points to the graphs, follows the data unless the user zoomed
  // or panned, and asks for one queued replot.
  void flush();

  void setXMode(XAxisMode mode);
  XAxisMode xMode() const { return mode_; }
  void setSmoothing(double weight);
  void setLogScale(bool on);
  bool logScale() const { return log_; }
  // The values are counts (staleness in rounds): whole steps between the
  // linear y axis's ticks.
  void setWholeValues(bool whole);
  void resetView();
  // A vertical line with a label, e.g. where the loss became NaN.
  // label_y: where the label hangs, as a fraction of the plot's height from
  // its top (low on charts whose data sits high, such as accuracy).
  void addMarker(const XPoint& x, const QString& text, const QColor& color = Qt::red, double label_y = 0.12);
  int markerCount() const { return static_cast<int>(markers_.size()); }
  // Moves marker `marker` (an index in the order added) and relabels it:
  // one marker that follows a changing fact, such as the best epoch so far.
  void moveMarker(int marker, const XPoint& x, const QString& text);
  QString markerText(int marker) const;
  // A new run's markers must not inherit the previous run's.
  void clearMarkers();

  bool exportPng(const QString& path);
  bool exportPdf(const QString& path);
  bool exportCsv(const QString& path) const;
  // Asks where (a save dialog filtered to the kind: png, pdf or csv), then exports.
  void exportWithDialog(const QString& kind);

  int seriesCount() const { return static_cast<int>(series_.size()); }
  int seriesIndex(const QString& name) const;  // -1 if absent
  QString seriesName(int series) const;
  // The legend text; the name stays the series' key (seriesIndex, removal,
  // CSV), so a label can carry live figures ("worker 1 — 812 steps").
  void setSeriesLabel(int series, const QString& label);
  QString seriesLabel(int series) const;
  // Pens and points; the layer (on_top) stays as the series was added.
  void setSeriesStyle(int series, const Style& style);
  const Style& seriesStyle(int series) const;
  // Every appended value, flushed or not.
  const std::vector<double>& seriesValues(int series) const;
  int pointCount(int series) const;  // points in the plotted graph
  void setSeriesVisible(int series, bool visible);
  bool seriesVisible(int series) const;
  // The crosshair's text for an x coordinate: every visible series' value
  // at the nearest point.
  QString readoutAt(double x) const;
  QCustomPlot* plot() const { return plot_; }
  bool followingData() const { return !user_view_; }
  // Whether the crosshair and its readout are showing, and their text.
  bool readoutVisible() const;
  QString readoutText() const;

protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

private:
  struct Series;
  struct Marker;
  void applyPens(Series& s);
  void rebuild();
  void placeMarker(Marker& m);
  // After each layout: a marker's label goes left of its line, or right of
  // it where the plot's left edge would cut it off, and never past the plot.
  void keepMarkerLabelsInside();
  void onMouseMove(QMouseEvent* event);
  // Places the crosshair at the pointer's last position, or hides it when
  // the pointer is not over the plot area.
  void updateReadout();
  void hideReadout();
  // The ranges that show every visible point and marker (when following).
  void fitAxes();
  void fitTickCounts();
  void onLegendClick(QCPLegend* legend, QCPAbstractLegendItem* item, QMouseEvent* event);
  void showContextMenu(const QPoint& pos);
  double xOf(const XPoint& p) const;

  QString title_;
  QCustomPlot* plot_;
  QCPItemStraightLine* cross_line_;
  QCPItemText* cross_text_;
  std::vector<std::unique_ptr<Series>> series_;
  std::vector<std::unique_ptr<Marker>> markers_;
  XAxisMode mode_ = XAxisMode::Step;
  double smoothing_ = 0.0;
  bool log_ = false;
  bool whole_values_ = false;
  bool user_view_ = false;  // the user zoomed or panned: stop following data
  QPoint pointer_{-1, -1};  // over the plot, in its pixels; (-1, -1): elsewhere
};

}  // namespace strata::ui
