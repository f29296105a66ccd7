#pragma once
#include <QString>
#include <QWidget>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "trace/Span.h"
#include "trace/StepBreakdown.h"

class QCustomPlot;
class QCPFinancial;
class QLabel;
class QMouseEvent;
class QStackedLayout;
class QTableWidget;

namespace strata::ui {

// The Timeline tab: where each step's time goes, lane by lane (a replica, its
// communication stream, a worker, a server), as the engine's spans arrive.
// Only the last few steps are kept, so a long run costs no more memory or
// paint time than a short one; under the chart, each replica's or worker's
// share of step time per kind of work and how much communication hid behind
// compute. Mouse wheel zooms the time axis, drag pans, double-click follows
// the newest steps again.
class TimelinePanel : public QWidget {
  Q_OBJECT
public:
  explicit TimelinePanel(QWidget* parent = nullptr);
  ~TimelinePanel() override;

  // Spans in any order and any batching (the engine drains per thread).
  void addSpans(const std::vector<trace::Span>& spans);
  void clear();
  // Keeps the spans of the last `n` steps seen (the highest step numbers).
  void setStepsShown(int n);
  int stepsShown() const { return steps_shown_; }

  // What the chart shows.
  int laneCount() const { return static_cast<int>(lanes_.size()); }
  // The lane's row on the y axis (0 at the top), -1 when it has no shown span.
  int laneRow(const trace::Lane& lane) const;
  QString laneLabel(int row) const;
  int spansShown() const { return static_cast<int>(shown_.size()); }
  std::vector<int64_t> stepsKept() const;
  // Microseconds on the engine's clock at x = 0 (the first shown span's start).
  double originUs() const { return origin_us_; }
  // The replica or worker marked slowest in `step`, as its row's label ("" when none).
  QString slowestLaneOfStep(int64_t step) const;
  int slowestMarks() const;
  bool showingEmptyState() const;
  QString emptyStateText() const;

  // The last span the pointer rested on: the tooltip's text ("" when the
  // pointer is over no span) and the span itself.
  QString hoverText() const { return hover_text_; }
  std::optional<trace::Span> hoveredSpan() const { return hovered_; }
  // The span under a pixel of the plot (innermost when nested), as the hover finds it.
  std::optional<trace::Span> spanAt(const QPoint& pixel) const;
  // Tooltip text for a span.
  QString describe(const trace::Span& span) const;

  QCustomPlot* plot() const { return plot_; }
  QTableWidget* summaryTable() const { return table_; }
  // "communication hidden behind compute: 50.0% of 4.0 ms" ("" without communication).
  QString hiddenCommText() const;

  // Follows the newest steps again after the user zoomed or panned.
  void resetView();

private:
  void rebuild();
  void trim();
  void updateChart(const std::vector<trace::Span>& shown, const std::vector<trace::StepBreakdown>& steps);
  void updateSummary(const std::vector<trace::StepBreakdown>& steps);
  void fitTimeAxis();
  void onMouseMove(QMouseEvent* event);

  QStackedLayout* stack_;
  QLabel* empty_;
  QCustomPlot* plot_;
  QTableWidget* table_;
  QLabel* comm_;
  // One plottable per kind: each draws all its rectangles in one pass and
  // carries the kind's legend entry.
  std::array<QCPFinancial*, trace::kSpanKinds> kind_bars_{};
  QCPFinancial* slowest_bars_ = nullptr;

  int steps_shown_ = 20;
  std::map<int64_t, std::vector<trace::Span>> steps_;  // step -> its spans, only the kept steps
  std::vector<trace::Span> unstepped_;                 // step < 0 (a checkpoint between epochs)
  std::vector<trace::Span> shown_;                     // all of the above, which the hover searches
  std::vector<trace::Lane> lanes_;                     // row order
  std::map<int64_t, trace::Lane> slowest_;             // step -> its slowest replica/worker
  double origin_us_ = 0;
  double end_ms_ = 0;       // the last shown span's end, relative to the origin
  bool user_view_ = false;  // the user zoomed or panned: stop following the newest steps
  QString hover_text_;
  std::optional<trace::Span> hovered_;
};

}  // namespace strata::ui
