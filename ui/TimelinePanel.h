#pragma once
#include <QString>
#include <QWidget>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "TimelineFile.h"
#include "TimelineSummary.h"
#include "trace/ChromeTraceReader.h"
#include "trace/Span.h"
#include "trace/StepBreakdown.h"

class QCustomPlot;
class QCPFinancial;
class QLabel;
class QMouseEvent;
class QStackedLayout;
class QTableWidget;

namespace strata::ui {

class TimelineSourceBar;

// The Timeline tab: where each step's time goes, lane by lane (a replica, its
// communication stream, a worker, a server), as the engine's spans arrive.
// Only the last few steps are kept, so a long run costs no more memory or
// paint time than a short one; under the chart, each replica's or worker's
// share of step time per kind of work and how much communication hid behind
// compute. Mouse wheel zooms the time axis, drag pans, double-click follows
// the newest steps again.
//
// It can show a trace file instead (showTrace: a run folder's trace.json or
// a merged multi-rank trace, each rank's lanes apart): then all the file's
// steps are kept, `stepsShown` of them are drawn from the step the "from
// step" box says, and a live run's spans keep arriving underneath until Live
// (or a new run, clear()) shows them again. Choosing and reading the file is
// the window's (openTraceRequested), so errors go where its others go.
class TimelinePanel : public QWidget {
  Q_OBJECT
public:
  explicit TimelinePanel(QWidget* parent = nullptr);
  ~TimelinePanel() override;

  // Spans in any order and any batching (the engine drains per thread).
  void addSpans(const std::vector<trace::Span>& spans);
  // A new run: drops the live spans, and a file shown gives way to the live view.
  void clear();
  // Live: keeps the spans of the last `n` steps seen (the highest step
  // numbers; once device lanes came, of those that have them: a run whose
  // device lanes are sampled shows its newest burst). A file: draws `n` of
  // its steps.
  void setStepsShown(int n);
  int stepsShown() const { return steps_shown_; }

  // Shows a trace file's spans, from its last `stepsShown` steps.
  void showTrace(const trace::TraceContents& contents);
  // Back to the spans of the run (those that came while the file was shown too).
  void showLive();
  // The label above the chart says `path` is being read (the window reads
  // it off this thread); an empty path: done, the label shows the source again.
  void showReading(const QString& path);
  bool showingFile() const { return file_.has_value(); }
  QString shownFile() const { return file_ ? file_->path() : QString(); }
  // A file's steps (all of them, not only those drawn); 0 when live.
  int fileStepCount() const { return file_ ? file_->stepCount() : 0; }
  // A file: draws from its first step at or after `step`.
  void setFirstStep(int64_t step);
  // What the label above the chart says: the file and its run, or live.
  QString sourceText() const;

  // What the chart shows.
  int laneCount() const { return static_cast<int>(lanes_.size()); }
  // The lane's row on the y axis (0 at the top), -1 when it has no shown span.
  int laneRow(const trace::Lane& lane) const;
  QString laneLabel(int row) const;
  int spansShown() const { return static_cast<int>(shown_.size()); }
  // The steps drawn (live: those kept), ascending.
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
  QTableWidget* summaryTable() const { return summary_.table(); }
  // "communication hidden behind compute: 50.0% of 4.0 ms" ("" without communication).
  QString hiddenCommText() const;

  // Follows the newest steps again after the user zoomed or panned.
  void resetView();

Q_SIGNALS:
  // The "Open trace…" button: the window asks for a file and reads it.
  void openTraceRequested();

private:
  void rebuild();
  void trim();
  // Whether a kept step is drawn (not when the run has device lanes and it has none).
  bool drawn(const std::vector<trace::Span>& step_spans) const;
  void updateChart(const std::vector<trace::Span>& shown, const std::vector<trace::StepBreakdown>& steps);
  void fitTimeAxis();
  void onMouseMove(QMouseEvent* event);

  int steps_shown_ = 20;  // declared before source_bar_, whose step count box starts at it
  TimelineSourceBar* source_bar_;
  QStackedLayout* stack_;
  QLabel* empty_;
  QCustomPlot* plot_;
  TimelineSummary summary_;
  // One plottable per kind: each draws all its rectangles in one pass and
  // carries the kind's legend entry.
  std::array<QCPFinancial*, trace::kSpanKinds> kind_bars_{};
  QCPFinancial* slowest_bars_ = nullptr;

  // The live run's spans: step -> its spans, only the kept steps.
  std::map<int64_t, std::vector<trace::Span>> steps_;
  // The run has device lanes: the steps drawn are those with device spans
  // (sampled device lanes mark bursts of steps, docs/timeline.md), so the
  // chart shows the newest burst whole rather than newer steps without them.
  bool device_lanes_ = false;
  std::vector<trace::Span> unstepped_;  // step < 0 (a checkpoint between epochs)
  std::optional<TimelineFile> file_;    // a trace file shown instead
  std::vector<trace::Span> shown_;      // what is drawn, which the hover searches
  std::vector<int64_t> shown_steps_;
  std::vector<trace::Lane> lanes_;          // row order
  std::map<int64_t, trace::Lane> slowest_;  // step -> its slowest replica/worker
  double origin_us_ = 0;
  double end_ms_ = 0;       // the last shown span's end, relative to the origin
  bool user_view_ = false;  // the user zoomed or panned: stop following the newest steps
  QString hover_text_;
  std::optional<trace::Span> hovered_;
};

}  // namespace strata::ui
