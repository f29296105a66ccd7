#include "TimelinePanel.h"

#include <qcustomplot.h>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QStackedLayout>
#include <QTableWidget>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <tuple>

#include "PlotLegend.h"

namespace strata::ui {

using trace::Lane;
using trace::LaneKind;
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

// Related kinds share a hue (compute blue/orange, collectives greens,
// parameter-server traffic pale), waits are greys and reds so idle time
// stands out; fixed, so a kind keeps its colour from run to run.
QColor kind_color(SpanKind k) {
  static const QColor colors[trace::kSpanKinds] = {
      QColor(228, 228, 228),  // step
      QColor(188, 189, 34),   // data_wait
      QColor(23, 190, 207),   // host_to_device
      QColor(31, 119, 180),   // forward
      QColor(255, 127, 14),   // backward
      QColor(44, 160, 44),    // all_reduce
      QColor(152, 223, 138),  // reduce_scatter
      QColor(0, 109, 44),     // all_gather
      QColor(148, 103, 189),  // optimizer
      QColor(127, 127, 127),  // collective_wait
      QColor(140, 86, 75),    // checkpoint
      QColor(227, 119, 194),  // evaluation
      QColor(174, 199, 232),  // pull
      QColor(255, 187, 120),  // push
      QColor(247, 129, 129),  // staleness_wait
  };
  return colors[static_cast<int>(k)];
}

QString kind_label(SpanKind k) {
  return QString::fromLatin1(trace::span_kind_name(k).data(), static_cast<qsizetype>(trace::span_kind_name(k).size()))
      .replace('_', ' ');
}

QString lane_label(const Lane& l) { return QString::fromStdString(trace::lane_name(l)); }

bool computes(const Lane& l) { return l.kind == LaneKind::Replica || l.kind == LaneKind::Worker; }

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

QString percent(double part, double whole) {
  return QStringLiteral("%1%").arg(whole > 0 ? 100 * part / whole : 0.0, 0, 'f', 1);
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
      open_(new QPushButton(tr("Open trace…"))),
      live_(new QPushButton(tr("Live"))),
      source_(new QLabel),
      first_step_(new QSpinBox),
      steps_box_(new QSpinBox),
      stack_(new QStackedLayout),
      empty_(new QLabel(this)),
      plot_(new QCustomPlot),
      table_(new QTableWidget),
      comm_(new QLabel) {
  empty_->setObjectName("timelineEmpty");
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setWordWrap(true);
  empty_->setEnabled(false);  // greyed: a hint, not content

  auto* content = new QWidget(this);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_, 3);
  layout->addWidget(comm_);
  layout->addWidget(table_, 1);
  stack_->addWidget(empty_);
  stack_->addWidget(content);
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->addWidget(makeHeader());
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

  table_->setObjectName("timelineSummary");
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionMode(QAbstractItemView::NoSelection);
  table_->setFocusPolicy(Qt::NoFocus);  // figures to read, not cells to visit
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setToolTip(tr("Share of each replica's or worker's step time per kind of work, over the steps shown"));
  comm_->setObjectName("timelineHiddenComm");

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
  if (steps_box_->value() != steps_shown_) {
    const QSignalBlocker quiet(steps_box_);
    steps_box_->setValue(steps_shown_);
  }
  trim();
  user_view_ = false;
  rebuild();
}

QWidget* TimelinePanel::makeHeader() {
  auto* header = new QWidget(this);
  auto* row = new QHBoxLayout(header);
  row->setContentsMargins(4, 2, 4, 2);
  open_->setObjectName("openTraceButton");
  open_->setToolTip(tr("Show a trace file: a run folder's trace.json, or ranks merged with strata-run --merge-traces"));
  live_->setObjectName("liveTimelineButton");
  live_->setToolTip(tr("Show the running (or last) run's steps again"));
  source_->setObjectName("timelineSource");
  source_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  first_step_->setObjectName("timelineFirstStep");
  first_step_->setPrefix(tr("from step "));
  first_step_->setToolTip(tr("The first of the file's steps drawn"));
  steps_box_->setObjectName("timelineStepsShown");
  steps_box_->setRange(1, 100'000);
  steps_box_->setValue(steps_shown_);
  steps_box_->setSuffix(tr(" steps"));
  steps_box_->setToolTip(tr("How many steps are drawn (live: the last ones)"));
  // Typed numbers apply on Enter (or leaving the box), not at each digit:
  // a long file is redrawn once.
  first_step_->setKeyboardTracking(false);
  steps_box_->setKeyboardTracking(false);
  row->addWidget(open_);
  row->addWidget(live_);
  row->addWidget(source_, 1);
  row->addWidget(first_step_);
  row->addWidget(steps_box_);
  connect(open_, &QPushButton::clicked, this, &TimelinePanel::openTraceRequested);
  connect(live_, &QPushButton::clicked, this, &TimelinePanel::showLive);
  connect(steps_box_, &QSpinBox::valueChanged, this, &TimelinePanel::setStepsShown);
  connect(first_step_, &QSpinBox::valueChanged, this, [this](int step) { setFirstStep(step); });
  return header;
}

void TimelinePanel::showTrace(const trace::TraceContents& contents) {
  FileView f;
  f.path = QString::fromStdString(contents.path);
  for (const Span& s : contents.spans) {
    if (!std::isfinite(s.start_us) || !std::isfinite(s.duration_us)) continue;
    if (s.step < 0) f.unstepped.push_back(s);
    else f.steps[s.step].push_back(s);
  }
  QStringList ranks, hosts;
  for (const trace::TraceRank& r : contents.ranks) {
    ranks << QString::number(r.rank);
    if (!r.host.empty() && !hosts.contains(QString::fromStdString(r.host))) hosts << QString::fromStdString(r.host);
  }
  QStringList parts;
  if (!contents.run_name.empty()) parts << tr("run “%1”").arg(QString::fromStdString(contents.run_name));
  if (!ranks.isEmpty()) parts << (ranks.size() == 1 ? tr("rank %1") : tr("ranks %1")).arg(ranks.join(", "));
  if (!hosts.isEmpty()) parts << hosts.join(", ");
  parts << (f.steps.size() == 1 ? tr("1 step") : tr("%1 steps").arg(f.steps.size()));
  if (contents.skipped > 0) parts << tr("%1 unknown span events left out").arg(contents.skipped);
  f.description = tr("%1: %2").arg(QFileInfo(f.path).fileName(), parts.join(" · "));
  // The last steps first, as live: where a run's steady state is.
  auto from = f.steps.rbegin();
  for (int n = 1; n < steps_shown_ && from != f.steps.rend() && std::next(from) != f.steps.rend(); ++n) ++from;
  f.first = from != f.steps.rend() ? from->first : 0;
  file_ = std::move(f);
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

void TimelinePanel::setFirstStep(int64_t step) {
  if (!file_ || file_->first == step) return;
  file_->first = step;
  user_view_ = false;
  rebuild();
}

QString TimelinePanel::sourceText() const { return source_->text(); }

void TimelinePanel::updateHeader() {
  live_->setVisible(file_.has_value());
  first_step_->setVisible(file_.has_value());
  source_->setText(file_ ? file_->description : tr("live"));
  source_->setToolTip(file_ ? file_->path : QString());
  source_->setEnabled(file_.has_value());  // greyed when live: a hint, the chart says the rest
  empty_->setText(file_ ? tr("%1 holds no spans").arg(QFileInfo(file_->path).fileName())
                        : tr("Turn on tracing in the Training panel (or strata-run --trace) to see where each step's "
                             "time goes, or open a trace file"));
  if (!file_) return;
  const QSignalBlocker quiet(first_step_);
  const bool any = !file_->steps.empty();
  first_step_->setRange(any ? static_cast<int>(file_->steps.begin()->first) : 0,
                        any ? static_cast<int>(file_->steps.rbegin()->first) : 0);
  first_step_->setValue(static_cast<int>(file_->first));
}

void TimelinePanel::trim() {
  while (static_cast<int>(steps_.size()) > steps_shown_) steps_.erase(steps_.begin());
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
    auto earliest = [](const std::vector<Span>& spans) {
      double t = HUGE_VAL;
      for (const Span& s : spans) t = std::min(t, s.start_us);
      return t;
    };
    auto it = file_->steps.lower_bound(file_->first);
    // Work of no step (an evaluation, a checkpoint) goes with the steps
    // before it: from the first step drawn (the file's start when that is
    // its first step) until the next step not drawn (the file's end).
    const double lo = it == file_->steps.begin() || it == file_->steps.end() ? -HUGE_VAL : earliest(it->second);
    for (int n = 0; it != file_->steps.end() && n < steps_shown_; ++it, ++n) {
      shown_.insert(shown_.end(), it->second.begin(), it->second.end());
      shown_steps_.push_back(it->first);
    }
    const double hi = it == file_->steps.end() ? HUGE_VAL : earliest(it->second);
    for (const Span& s : file_->unstepped)
      if (s.start_us >= lo && s.start_us < hi) shown_.push_back(s);
  } else {
    for (const auto& [step, spans] : steps_) {
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
  updateSummary(steps);
  updateHeader();
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

void TimelinePanel::updateSummary(const std::vector<trace::StepBreakdown>& steps) {
  // Per replica/worker over the shown steps: summed step time and time per
  // kind. A lane without Step spans is measured against its summed work.
  struct Totals {
    double step_us = 0;
    int steps = 0;
    std::array<double, trace::kSpanKinds> kind_us{};
  };
  struct LaneOrder {
    bool operator()(const Lane& a, const Lane& b) const { return trace::lane_before(a, b); }
  };
  std::map<Lane, Totals, LaneOrder> rows;
  std::array<bool, trace::kSpanKinds> present{};
  double comm_us = 0, hidden_us = 0;
  for (const trace::StepBreakdown& b : steps) {
    comm_us += b.comm_us;
    hidden_us += b.comm_hidden_us;
    for (const trace::LaneBreakdown& l : b.lanes) {
      if (!computes(l.lane)) continue;
      Totals& t = rows[l.lane];
      t.step_us += l.step_us;
      t.steps += l.step_us > 0;
      for (size_t k = 1; k < l.kind_us.size(); ++k) {
        t.kind_us[k] += l.kind_us[k];
        present[k] = present[k] || l.kind_us[k] > 0;
      }
    }
  }
  std::vector<SpanKind> kinds;
  QStringList headers{tr("mean step")};
  for (size_t k = 1; k < present.size(); ++k) {
    if (!present[k]) continue;
    kinds.push_back(static_cast<SpanKind>(k));
    headers << kind_label(kinds.back());
  }
  table_->clear();
  table_->setColumnCount(static_cast<int>(headers.size()));
  table_->setHorizontalHeaderLabels(headers);
  table_->setRowCount(static_cast<int>(rows.size()));
  int r = 0;
  for (const auto& [lane, t] : rows) {
    table_->setVerticalHeaderItem(r, new QTableWidgetItem(lane_label(lane)));
    const QString mean = t.steps > 0 ? tr("%1 ms").arg(t.step_us / t.steps / 1000, 0, 'f', 3) : tr("—");
    table_->setItem(r, 0, new QTableWidgetItem(mean));
    double whole = t.step_us;
    if (whole <= 0)
      for (double v : t.kind_us) whole += v;
    for (size_t c = 0; c < kinds.size(); ++c) {
      auto* item = new QTableWidgetItem(percent(t.kind_us[static_cast<size_t>(kinds[c])], whole));
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      table_->setItem(r, static_cast<int>(c) + 1, item);
    }
    ++r;
  }
  comm_->setText(comm_us > 0 ? tr("communication hidden behind compute: %1 of %2 ms")
                                   .arg(percent(hidden_us, comm_us))
                                   .arg(comm_us / 1000, 0, 'f', 1)
                             : QString());
  comm_->setVisible(comm_us > 0);
}

QString TimelinePanel::hiddenCommText() const { return comm_->text(); }

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
