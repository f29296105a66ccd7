#include "TimelinePanel.h"

#include <qcustomplot.h>
#include <QFileInfo>
#include <QLabel>
#include <QStackedLayout>
#include <QTableWidget>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <tuple>

#include "PlotLegend.h"
#include "TimelineSourceBar.h"
#include "TimelineStyle.h"

namespace strata::ui {

using trace::Lane;
using trace::Span;
using trace::SpanKind;

namespace {

// Spans of no step (a checkpoint between epochs) kept at most, so a run that
// records them without steps still has bounded memory.
constexpr size_t kMaxUnstepped = 64;
// Heights in rows: the step is the lane's frame, the work inside it sits
// narrower on top so idle time inside a step shows as bare frame; the
// slowest lane's outline rings the frame.
constexpr double kStepHeight = 0.8;
constexpr double kWorkHeight = 0.56;
constexpr double kOutlineHeight = 0.9;

QString human_bytes(int64_t bytes) {
  if (bytes < 1024) return QStringLiteral("%1 B").arg(bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return QStringLiteral("%1 %2").arg(v, 0, 'f', 1).arg(QLatin1String(units[u]));
}

// A horizontal bar per data point: QCPFinancial's candlestick body, with the
// lane row as key on the vertical axis and open/close as start/end on the
// time axis. One plottable draws all of a kind's bars with a single pen and
// brush, so a replot costs a loop of drawRect, not thousands of items.
QCPFinancial* make_bars(QCustomPlot* plot, double height, const QPen& pen, const QBrush& brush) {
  auto* bars = new QCPFinancial(plot->yAxis, plot->xAxis);
  bars->setChartStyle(QCPFinancial::csCandlestick);
  bars->setTwoColored(false);
  bars->setWidthType(QCPFinancial::wtPlotCoords);
  bars->setWidth(height);
  bars->setPen(pen);
  bars->setBrush(brush);
  bars->setAntialiased(false);  // crisp edges; neighbouring spans meet without a blurred seam
  bars->setSelectable(QCP::stNone);
  bars->removeFromLegend();
  return bars;
}

QCPFinancialData bar(double row, double start_ms, double end_ms) { return {row, start_ms, end_ms, start_ms, end_ms}; }

}  // namespace

TimelinePanel::TimelinePanel(QWidget* parent)
    : QWidget(parent),
      source_bar_(new TimelineSourceBar(steps_shown_)),
      stack_(new QStackedLayout),
      empty_(new QLabel(this)),
      plot_(new QCustomPlot) {
  empty_->setObjectName("timelineEmpty");
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setWordWrap(true);
  empty_->setEnabled(false);  // greyed: a hint, not content

  auto* content = new QWidget(this);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_, 3);
  layout->addWidget(summary_.hiddenComm());
  layout->addWidget(summary_.table(), 1);
  stack_->addWidget(empty_);
  stack_->addWidget(content);
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->addWidget(source_bar_);
  outer->addLayout(stack_, 1);

  plot_->setObjectName("timelinePlot");
  plot_->setMinimumHeight(180);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  // Lanes are few and fixed; zooming or dragging them away helps nobody.
  plot_->axisRect()->setRangeDrag(Qt::Horizontal);
  plot_->axisRect()->setRangeZoom(Qt::Horizontal);
  plot_->xAxis->setLabel(tr("time (ms)"));
  plot_->xAxis->setRange(0, 1);
  plot_->yAxis->setRangeReversed(true);  // the first lane on top, as in trace viewers
  plot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  plot_->yAxis->grid()->setVisible(false);
  plot_->yAxis->setRange(-0.5, 0.5);
  // The legend in its own row above the plot, as the charts have it: inside
  // it would cover spans.
  place_legend_in_row(plot_, 0, 6, font(), QMargins(4, 4, 4, 0));

  // Created in kind order, Step first: plottables paint in that order, so the
  // work inside a step lies on its frame.
  for (int k = 0; k < trace::kSpanKinds; ++k) {
    const auto kind = static_cast<SpanKind>(k);
    const QColor c = kind_color(kind);
    const bool frame = kind == SpanKind::Step;
    kind_bars_[static_cast<size_t>(k)] = make_bars(plot_, frame ? kStepHeight : kWorkHeight,
                                                   QPen(frame ? c.darker(115) : c.darker(130)), QBrush(c));
    kind_bars_[static_cast<size_t>(k)]->setName(kind_label(kind));
  }
  slowest_bars_ = make_bars(plot_, kOutlineHeight, QPen(QColor(170, 0, 0), 2), Qt::NoBrush);
  slowest_bars_->setName(tr("slowest in its step"));

  connect(source_bar_, &TimelineSourceBar::openTraceRequested, this, &TimelinePanel::openTraceRequested);
  connect(source_bar_, &TimelineSourceBar::liveRequested, this, &TimelinePanel::showLive);
  connect(source_bar_, &TimelineSourceBar::stepsShownChanged, this, &TimelinePanel::setStepsShown);
  connect(source_bar_, &TimelineSourceBar::firstStepChanged, this, &TimelinePanel::setFirstStep);
  connect(plot_, &QCustomPlot::mouseMove, this, &TimelinePanel::onMouseMove);
  connect(plot_, &QCustomPlot::mouseWheel, this, [this] { user_view_ = true; });
  connect(plot_, &QCustomPlot::mouseDoubleClick, this, [this] { resetView(); });
  rebuild();
}

TimelinePanel::~TimelinePanel() = default;

void TimelinePanel::addSpans(const std::vector<Span>& spans) {
  if (spans.empty()) return;
  for (const Span& s : spans) {
    // As the trace files do (docs/timeline.md): a NaN time has no place on the axis.
    if (!std::isfinite(s.start_us) || !std::isfinite(s.duration_us)) continue;
    if (s.step < 0) {
      unstepped_.push_back(s);
      continue;
    }
    device_lanes_ = device_lanes_ || s.lane.kind == trace::LaneKind::Device;
    // A late span of a step already dropped would bring the step back and
    // push a newer one out.
    const bool full = static_cast<int>(steps_.size()) >= steps_shown_;
    if (full && s.step < steps_.begin()->first && !steps_.count(s.step)) continue;
    steps_[s.step].push_back(s);
  }
  trim();
  if (!file_) rebuild();  // a file shown stays as it is; Live shows these
}

void TimelinePanel::clear() {
  steps_.clear();
  device_lanes_ = false;
  unstepped_.clear();
  file_.reset();
  user_view_ = false;
  hover_text_.clear();
  hovered_.reset();
  QToolTip::hideText();
  rebuild();
}

void TimelinePanel::setStepsShown(int n) {
  steps_shown_ = std::max(1, n);
  source_bar_->setStepsShown(steps_shown_);
  trim();
  user_view_ = false;
  rebuild();
}

void TimelinePanel::showTrace(const trace::TraceContents& contents) {
  file_.emplace(contents, steps_shown_);
  user_view_ = false;
  hover_text_.clear();
  hovered_.reset();
  rebuild();
}

void TimelinePanel::showLive() {
  if (!file_) return;
  file_.reset();
  user_view_ = false;
  hover_text_.clear();
  hovered_.reset();
  rebuild();
}

void TimelinePanel::showReading(const QString& path) { source_bar_->showReading(path); }

void TimelinePanel::setFirstStep(int64_t step) {
  if (!file_ || !file_->setFirstStep(step)) return;
  user_view_ = false;
  rebuild();
}

QString TimelinePanel::sourceText() const { return source_bar_->sourceText(); }

bool TimelinePanel::drawn(const std::vector<Span>& step_spans) const {
  return !device_lanes_ || std::any_of(step_spans.begin(), step_spans.end(),
                                       [](const Span& s) { return s.lane.kind == trace::LaneKind::Device; });
}

void TimelinePanel::trim() {
  // The newest steps_shown_ drawn steps stay (with device lanes, those of the
  // newest burst alone: consecutive steps, not the tail of the burst before
  // a sampling period ago), and newer steps not drawn yet, a few: a step's
  // device spans can come in the batch after its host spans.
  constexpr int kAwaitingDevice = 2;
  int kept = 0, awaiting = 0;
  int64_t last_kept = 0;
  for (auto it = steps_.end(); it != steps_.begin();) {
    --it;
    bool keep;
    if (!drawn(it->second)) {
      keep = kept == 0 && ++awaiting <= kAwaitingDevice;
    } else {
      keep = (!device_lanes_ || kept == 0 || it->first == last_kept - 1) && ++kept <= steps_shown_;
      if (keep) last_kept = it->first;
    }
    if (!keep) it = steps_.erase(it);
  }
  // Spans of no step stay while they fall within the kept steps' time (or
  // while there are no steps), and never more than kMaxUnstepped.
  double first_us = HUGE_VAL;
  for (const auto& [step, spans] : steps_)
    for (const Span& s : spans) first_us = std::min(first_us, s.start_us);
  std::sort(unstepped_.begin(), unstepped_.end(), [](const Span& a, const Span& b) { return a.start_us < b.start_us; });
  std::erase_if(unstepped_, [&](const Span& s) { return s.start_us + s.duration_us < first_us && first_us < HUGE_VAL; });
  if (unstepped_.size() > kMaxUnstepped)
    unstepped_.erase(unstepped_.begin(), unstepped_.end() - static_cast<std::ptrdiff_t>(kMaxUnstepped));
}

void TimelinePanel::rebuild() {
  // Everything is recomputed from the kept spans: a few thousand at most,
  // which costs far less than the paint that follows, and a late span of an
  // earlier step (threads drain in any order) lands where it belongs.
  shown_.clear();
  shown_steps_.clear();
  if (file_) {
    file_->window(steps_shown_, shown_, shown_steps_);
  } else {
    for (const auto& [step, spans] : steps_) {
      if (!drawn(spans)) continue;
      shown_.insert(shown_.end(), spans.begin(), spans.end());
      shown_steps_.push_back(step);
    }
    shown_.insert(shown_.end(), unstepped_.begin(), unstepped_.end());
  }

  lanes_.clear();
  for (const Span& s : shown_)
    if (std::find(lanes_.begin(), lanes_.end(), s.lane) == lanes_.end()) lanes_.push_back(s.lane);
  std::sort(lanes_.begin(), lanes_.end(), trace::lane_before);

  const std::vector<trace::StepBreakdown> steps = trace::summarize_steps(shown_);
  updateChart(shown_, steps);
  summary_.show(steps);
  source_bar_->showSource(file_ ? &*file_ : nullptr);
  empty_->setText(file_ ? tr("%1 holds no spans").arg(QFileInfo(file_->path()).fileName())
                        : tr("Turn on tracing in the Training panel (or strata-run --trace) to see where each step's "
                             "time goes, or open a trace file"));
  stack_->setCurrentIndex(shown_.empty() ? 0 : 1);
}

int TimelinePanel::laneRow(const Lane& lane) const {
  const auto it = std::find(lanes_.begin(), lanes_.end(), lane);
  return it == lanes_.end() ? -1 : static_cast<int>(it - lanes_.begin());
}

QString TimelinePanel::laneLabel(int row) const {
  return row >= 0 && row < laneCount() ? lane_label(lanes_[static_cast<size_t>(row)]) : QString();
}

void TimelinePanel::updateChart(const std::vector<Span>& shown, const std::vector<trace::StepBreakdown>& steps) {
  origin_us_ = 0;
  end_ms_ = 0;
  if (!shown.empty()) {
    origin_us_ = HUGE_VAL;
    for (const Span& s : shown) origin_us_ = std::min(origin_us_, s.start_us);
  }
  std::array<QVector<QCPFinancialData>, trace::kSpanKinds> bars;
  for (const Span& s : shown) {
    const double start = (s.start_us - origin_us_) / 1000, end = (s.start_us + s.duration_us - origin_us_) / 1000;
    end_ms_ = std::max(end_ms_, end);
    bars[static_cast<size_t>(s.kind)].push_back(bar(laneRow(s.lane), start, end));
  }
  // Rebuilt whole so the legend lists the kinds present in kind order.
  plot_->legend->clearItems();
  for (size_t k = 0; k < bars.size(); ++k) {
    kind_bars_[k]->data()->set(bars[k], false);
    if (!bars[k].isEmpty()) kind_bars_[k]->addToLegend();
  }

  slowest_.clear();
  QVector<QCPFinancialData> outlines;
  for (const trace::StepBreakdown& b : steps) {
    if (b.slowest < 0) continue;
    const Lane lane = b.lanes[static_cast<size_t>(b.slowest)].lane;
    slowest_[b.step] = lane;
    for (const Span& s : shown) {
      if (s.kind != SpanKind::Step || s.step != b.step || !(s.lane == lane)) continue;
      outlines.push_back(
          bar(laneRow(lane), (s.start_us - origin_us_) / 1000, (s.start_us + s.duration_us - origin_us_) / 1000));
    }
  }
  slowest_bars_->data()->set(outlines, false);
  if (!outlines.isEmpty()) slowest_bars_->addToLegend();

  auto ticker = plot_->yAxis->ticker().staticCast<QCPAxisTickerText>();
  ticker->clear();
  for (int row = 0; row < laneCount(); ++row) ticker->addTick(row, laneLabel(row));
  plot_->yAxis->setRange(-0.5, std::max(1, laneCount()) - 0.5);
  fitTimeAxis();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void TimelinePanel::fitTimeAxis() {
  if (user_view_) return;
  plot_->xAxis->setRange(0, end_ms_ > 0 ? end_ms_ * 1.02 : 1.0);
}

void TimelinePanel::resetView() {
  user_view_ = false;
  fitTimeAxis();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString TimelinePanel::hiddenCommText() const { return summary_.hiddenComm()->text(); }

std::vector<int64_t> TimelinePanel::stepsKept() const { return shown_steps_; }

QString TimelinePanel::slowestLaneOfStep(int64_t step) const {
  const auto it = slowest_.find(step);
  return it == slowest_.end() ? QString() : lane_label(it->second);
}

int TimelinePanel::slowestMarks() const { return slowest_bars_->data()->size(); }

bool TimelinePanel::showingEmptyState() const { return stack_->currentIndex() == 0; }

QString TimelinePanel::emptyStateText() const { return empty_->text(); }

std::optional<Span> TimelinePanel::spanAt(const QPoint& pixel) const {
  if (shown_.empty() || !plot_->axisRect()->rect().contains(pixel)) return std::nullopt;
  const double y = plot_->yAxis->pixelToCoord(pixel.y());
  const int row = static_cast<int>(std::lround(y));
  if (row < 0 || row >= laneCount()) return std::nullopt;
  const Lane lane = lanes_[static_cast<size_t>(row)];
  const double dy = std::abs(y - row), px = pixel.x();
  // The innermost span wins: work over its step's frame, a span the pointer
  // is inside over one it only comes near (a span under a pixel wide gets
  // two pixels either side so it can be hovered at all), then the shortest.
  std::optional<Span> best;
  std::tuple<bool, bool, double> best_rank{};
  for (const Span& s : shown_) {
    if (!(s.lane == lane)) continue;
    const bool frame = s.kind == SpanKind::Step;
    if (dy > (frame ? kStepHeight : kWorkHeight) / 2) continue;
    const double a = plot_->xAxis->coordToPixel((s.start_us - origin_us_) / 1000);
    const double b = plot_->xAxis->coordToPixel((s.start_us + s.duration_us - origin_us_) / 1000);
    const double lo = std::min(a, b), hi = std::max(a, b);
    if (px < lo - 2 || px > hi + 2) continue;
    const std::tuple<bool, bool, double> rank{frame, px < lo || px > hi, s.duration_us};
    if (!best || rank < best_rank) {
      best = s;
      best_rank = rank;
    }
  }
  return best;
}

QString TimelinePanel::describe(const Span& s) const {
  QString text = QStringLiteral("%1 — %2").arg(kind_label(s.kind), lane_label(s.lane));
  if (s.step >= 0) text += tr("\nstep %1").arg(s.step);
  text += tr("\n%1 ms").arg(s.duration_us / 1000, 0, 'f', 3);
  if (s.bytes != 0) text += QStringLiteral("\n") + human_bytes(s.bytes);
  return text;
}

void TimelinePanel::onMouseMove(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) {
    user_view_ = true;  // dragging pans
    return;
  }
  hovered_ = spanAt(event->pos());
  if (!hovered_) {
    hover_text_.clear();
    QToolTip::hideText();
    return;
  }
  hover_text_ = describe(*hovered_);
  QToolTip::showText(plot_->mapToGlobal(event->pos()), hover_text_, plot_);
}

}  // namespace strata::ui
