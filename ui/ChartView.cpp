#include "ChartView.h"

#include "ChartTicker.h"

#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QTextStream>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

#include "PlotLegend.h"

namespace strata::ui {

struct ChartView::Series {
  QString name;
  Style style;
  std::vector<double> x[3];  // indexed by XAxisMode
  std::vector<double> y;
  std::vector<double> smoothed;  // as far as plotted, when smoothing is on
  QCPGraph* raw = nullptr;
  QCPGraph* smooth = nullptr;
  EmaSmoother ema;
  size_t plotted = 0;
  bool visible = true;
  // The extent of the plotted points on the current x axis (finite values,
  // positive ones on a log scale), grown as points are plotted, so fitting
  // the axes at every flush costs nothing per point.
  double x_lo = HUGE_VAL, x_hi = -HUGE_VAL, y_lo = HUGE_VAL, y_hi = -HUGE_VAL;
  void extend(double x, double y, bool log) {
    x_lo = std::min(x_lo, x);
    x_hi = std::max(x_hi, x);
    if (!std::isfinite(y) || (log && y <= 0)) return;
    y_lo = std::min(y_lo, y);
    y_hi = std::max(y_hi, y);
  }
};

struct ChartView::Marker {
  XPoint x;
  double label_y = 0.12;
  QCPItemStraightLine* line = nullptr;
  QCPItemText* label = nullptr;
};

namespace {
const char* kXLabels[] = {"step", "epoch", "wall time (s)"};
constexpr size_t kMaxMarkedPoints = 200;
}

ChartView::ChartView(const QString& title, const QString& y_label, QWidget* parent)
    : QWidget(parent), title_(title), plot_(new QCustomPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_);
  setMinimumSize(240, 160);

  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  // Loss curves are jagged; stroking one wide polyline through thousands of
  // direction changes costs QPainter seconds, drawing segments costs
  // milliseconds.
  plot_->setPlottingHint(QCP::phFastPolylines, true);
  plot_->plotLayout()->insertRow(0);
  QFont title_font = font();
  title_font.setBold(true);
  plot_->plotLayout()->addElement(0, 0, new QCPTextElement(plot_, title, title_font));
  plot_->xAxis->setLabel(kXLabels[0]);
  plot_->yAxis->setLabel(y_label);
  plot_->xAxis->setTicker(QSharedPointer<ChartTicker>::create(true));  // steps: whole numbers
  plot_->yAxis->setTicker(QSharedPointer<ChartTicker>::create());
  // The legend gets its own row between the title and the plot: inside the
  // plot it sat under the crosshair, which then took the clicks meant for
  // its entries.
  place_legend_in_row(plot_, 1, 4, font(), QMargins(4, 0, 4, 0));
  plot_->xAxis->setRange(0, 1);
  plot_->yAxis->setRange(0, 1);
  // The reduced loss lives on its own layer so overlays added later never
  // cover it; the crosshair lives on the buffered "overlay" layer so moving
  // it repaints only that layer, not a million points.
  plot_->addLayer("top", plot_->layer("main"), QCustomPlot::limAbove);

  cross_line_ = new QCPItemStraightLine(plot_);
  cross_line_->setLayer("overlay");
  cross_line_->setPen(QPen(QColor(90, 90, 90), 1, Qt::DashLine));
  for (auto* p : {cross_line_->point1, cross_line_->point2}) {
    p->setTypeX(QCPItemPosition::ptPlotCoords);
    p->setTypeY(QCPItemPosition::ptAxisRectRatio);
  }
  cross_line_->setVisible(false);
  cross_text_ = new QCPItemText(plot_);
  cross_text_->setLayer("overlay");
  cross_text_->position->setType(QCPItemPosition::ptAxisRectRatio);
  cross_text_->position->setCoords(0.01, 0.02);
  cross_text_->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
  cross_text_->setTextAlignment(Qt::AlignLeft);
  cross_text_->setBrush(QColor(255, 255, 240, 220));
  cross_text_->setPen(QPen(QColor(160, 160, 160)));
  cross_text_->setPadding(QMargins(4, 2, 4, 2));
  cross_text_->setVisible(false);

  connect(plot_, &QCustomPlot::mouseMove, this, &ChartView::onMouseMove);
  // QCustomPlot emits mousePress before it looks for what lies under the
  // pointer. A press can come without a move to its spot first (a real X
  // server delivers the warped pointer's motion late); the crosshair, still
  // where the last move left it, would then take a click meant for a legend
  // entry. Moving it to the press first lets the click reach the legend.
  connect(plot_, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
    pointer_ = event->pos();
    updateReadout();
  });
  connect(plot_, &QCustomPlot::beforeReplot, this, &ChartView::fitTickCounts);
  connect(plot_, &QCustomPlot::afterLayout, this, &ChartView::keepMarkerLabelsInside);
  plot_->installEventFilter(this);  // the pointer leaving the plot hides the readout
  // Whatever moves the x axis (new data, zoom, pan, another axis mode) moves
  // the data under a resting pointer: read it out again.
  connect(plot_->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] { updateReadout(); });
  connect(plot_, &QCustomPlot::mouseWheel, this, [this] { user_view_ = true; });
  connect(plot_, &QCustomPlot::mouseDoubleClick, this, [this] { resetView(); });
  connect(plot_, &QCustomPlot::legendClick, this, &ChartView::onLegendClick);
  plot_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(plot_, &QWidget::customContextMenuRequested, this, &ChartView::showContextMenu);
}

ChartView::~ChartView() = default;

int ChartView::addSeries(const QString& name, const Style& style) {
  auto s = std::make_unique<Series>();
  s->name = name;
  s->style = style;
  s->raw = plot_->addGraph();
  s->smooth = plot_->addGraph();
  s->raw->setName(name);
  s->smooth->setName(name);
  if (style.on_top) {
    s->raw->setLayer("top");
    s->smooth->setLayer("top");
  }
  s->ema = EmaSmoother(smoothing_);
  series_.push_back(std::move(s));
  applyPens(*series_.back());
  return static_cast<int>(series_.size()) - 1;
}

void ChartView::removeSeries(const QString& prefix) {
  for (auto it = series_.begin(); it != series_.end();) {
    if ((*it)->name.startsWith(prefix)) {
      plot_->removeGraph((*it)->raw);
      plot_->removeGraph((*it)->smooth);
      it = series_.erase(it);
    } else {
      ++it;
    }
  }
  flush();
}

void ChartView::clear() {
  for (auto& s : series_) {
    plot_->removeGraph(s->raw);
    plot_->removeGraph(s->smooth);
  }
  series_.clear();
  clearMarkers();
  user_view_ = false;
  // Until the pointer moves again, nothing is read out of the empty chart.
  pointer_ = QPoint(-1, -1);
  hideReadout();
  fitAxes();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ChartView::clearMarkers() {
  for (auto& m : markers_) {
    plot_->removeItem(m->line);
    plot_->removeItem(m->label);
  }
  markers_.clear();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ChartView::moveMarker(int marker, const XPoint& x, const QString& text) {
  Marker& m = *markers_.at(static_cast<size_t>(marker));
  m.x = x;
  m.label->setText(text);
  placeMarker(m);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString ChartView::markerText(int marker) const { return markers_.at(static_cast<size_t>(marker))->label->text(); }

void ChartView::append(int series, const XPoint& x, double y) {
  Series& s = *series_.at(static_cast<size_t>(series));
  s.x[0].push_back(x.step);
  s.x[1].push_back(x.epoch);
  s.x[2].push_back(x.time);
  s.y.push_back(y);
}

void ChartView::appendMany(int series, std::span<const double> step, std::span<const double> epoch,
                           std::span<const double> time, std::span<const double> y) {
  Series& s = *series_.at(static_cast<size_t>(series));
  s.x[0].insert(s.x[0].end(), step.begin(), step.end());
  s.x[1].insert(s.x[1].end(), epoch.begin(), epoch.end());
  s.x[2].insert(s.x[2].end(), time.begin(), time.end());
  s.y.insert(s.y.end(), y.begin(), y.end());
}

void ChartView::flush() {
  const bool smoothing = smoothing_ > 0.0;
  for (auto& sp : series_) {
    Series& s = *sp;
    const size_t n = s.y.size();
    if (s.plotted >= n) continue;
    const auto& xs = s.x[static_cast<int>(mode_)];
    QVector<double> keys(static_cast<qsizetype>(n - s.plotted)), values(keys.size()), smooth;
    const bool smooth_this = smoothing && s.style.smoothable;
    if (smooth_this) smooth.resize(keys.size());
    for (size_t i = s.plotted; i < n; ++i) {
      const auto k = static_cast<qsizetype>(i - s.plotted);
      keys[k] = xs[i];
      // An infinite value would blow the axis range up; it becomes a gap and
      // the divergence marker says what happened.
      values[k] = std::isfinite(s.y[i]) ? s.y[i] : qQNaN();
      s.extend(xs[i], s.y[i], log_);
      if (smooth_this) {
        const double v = s.ema.push(s.y[i]);
        s.smoothed.push_back(v);
        smooth[k] = std::isfinite(v) ? v : qQNaN();
        s.extend(xs[i], v, log_);
      }
    }
    s.raw->addData(keys, values, true);
    if (smooth_this) s.smooth->addData(keys, smooth, true);
    // Circles mark per-epoch points while they are few; thousands of them
    // (a tiny dataset trained for many epochs) would cost more to paint
    // than the lines and say nothing more.
    if (s.style.points && s.plotted <= kMaxMarkedPoints && n > kMaxMarkedPoints) s.raw->setScatterStyle(QCPScatterStyle());
    s.plotted = n;
  }
  if (!user_view_) fitAxes();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ChartView::fitAxes() {
  // QCustomPlot's own rescale invents ranges where there is nothing to fit:
  // +-1e13 for a chart with no points yet, a sliver (936-940) around a
  // single point. The x axis starts at 0 (a run's beginning) and reaches the
  // last point or marker, so a divergence marker past the last finite loss
  // stays in view; the y axis spans the visible finite values.
  double x_lo = 0, x_hi = -HUGE_VAL, y_lo = HUGE_VAL, y_hi = -HUGE_VAL;
  for (const auto& sp : series_) {
    const Series& s = *sp;
    if (!s.visible) continue;
    x_lo = std::min(x_lo, s.x_lo);
    x_hi = std::max(x_hi, s.x_hi);
    y_lo = std::min(y_lo, s.y_lo);
    y_hi = std::max(y_hi, s.y_hi);
  }
  for (const auto& m : markers_) {
    x_lo = std::min(x_lo, xOf(m->x));
    x_hi = std::max(x_hi, xOf(m->x));
  }
  if (!(x_hi > x_lo)) x_hi = x_lo + 1;
  plot_->xAxis->setRange(x_lo, x_hi);
  if (y_lo > y_hi) {
    y_lo = log_ ? 0.1 : 0;  // nothing to show yet
    y_hi = 1;
  } else if (log_) {
    y_lo /= 1.2;
    y_hi *= 1.2;
  } else {
    const double pad = std::max((y_hi - y_lo) * 0.05, std::max(std::abs(y_hi) * 0.05, 1e-6));
    y_lo -= pad;
    y_hi += pad;
  }
  plot_->yAxis->setRange(y_lo, y_hi);
}

void ChartView::fitTickCounts() {
  // About one tick label per 100 px across and 40 px up of the plot area
  // (as laid out by the last replot; before the first, the widget less its
  // title, legend and labels), so labels never run into each other however
  // small the chart is.
  const QRect area = plot_->axisRect()->rect();
  const int w = area.width() > 0 ? area.width() : plot_->width() - 60;
  const int h = area.height() > 0 ? area.height() : plot_->height() - 80;
  for (auto [axis, count] : {std::pair{plot_->xAxis, w / 100}, std::pair{plot_->yAxis, h / 40}}) {
    axis->ticker()->setTickCount(std::max(1, count));
    // Exactly as many as fit; the default "readability" steps may add more.
    axis->ticker()->setTickStepStrategy(QCPAxisTicker::tssMeetTickCount);
  }
}

void ChartView::rebuild() {
  for (auto& s : series_) {
    s->raw->data()->clear();
    s->smooth->data()->clear();
    s->smoothed.clear();
    s->ema = EmaSmoother(smoothing_);
    s->plotted = 0;
    s->x_lo = s->y_lo = HUGE_VAL;
    s->x_hi = s->y_hi = -HUGE_VAL;
    applyPens(*s);
  }
  for (auto& m : markers_) placeMarker(*m);
  flush();
}

void ChartView::applyPens(Series& s) {
  const bool smoothing = smoothing_ > 0.0 && s.style.smoothable;
  QPen pen(s.style.color, s.style.width, s.style.pen);
  if (smoothing) {
    QColor faint = s.style.color;
    faint.setAlpha(55);
    s.raw->setPen(QPen(faint, std::max(1.0, s.style.width * 0.7), s.style.pen));
    s.smooth->setPen(pen);
  } else {
    s.raw->setPen(pen);
  }
  if (s.style.points && s.y.size() <= kMaxMarkedPoints)
    s.raw->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, s.style.color, Qt::white, 6));
  s.raw->setVisible(s.visible);
  s.smooth->setVisible(s.visible && smoothing);
  // The legend shows whichever line carries the series' meaning: the
  // smoothed one when smoothing is on. Rebuilt whole so the order stays
  // the order series were added.
  plot_->legend->clearItems();
  for (auto& other : series_) {
    QCPGraph* shown = smoothing_ > 0.0 && other->style.smoothable ? other->smooth : other->raw;
    shown->addToLegend();
    if (auto* item = plot_->legend->itemWithPlottable(shown))
      item->setTextColor(other->visible ? Qt::black : QColor(170, 170, 170));
  }
}

void ChartView::setXMode(XAxisMode mode) {
  if (mode == mode_) return;
  mode_ = mode;
  plot_->xAxis->setLabel(kXLabels[static_cast<int>(mode)]);
  plot_->xAxis->ticker().staticCast<ChartTicker>()->setWhole(mode == XAxisMode::Step);
  user_view_ = false;
  rebuild();
}

void ChartView::setSmoothing(double weight) {
  weight = std::clamp(weight, 0.0, 0.999);
  if (weight == smoothing_) return;
  smoothing_ = weight;
  rebuild();
}

void ChartView::setLogScale(bool on) {
  if (on == log_) return;
  log_ = on;
  if (on) {
    plot_->yAxis->setScaleType(QCPAxis::stLogarithmic);
    plot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  } else {
    plot_->yAxis->setScaleType(QCPAxis::stLinear);
    plot_->yAxis->setTicker(QSharedPointer<ChartTicker>::create(whole_values_));
  }
  fitTickCounts();
  user_view_ = false;
  rebuild();  // the extents: a log axis takes only positive values
}

void ChartView::setWholeValues(bool whole) {
  whole_values_ = whole;
  if (!log_) plot_->yAxis->ticker().staticCast<ChartTicker>()->setWhole(whole);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ChartView::resetView() {
  user_view_ = false;
  flush();
}

double ChartView::xOf(const XPoint& p) const {
  return mode_ == XAxisMode::Step ? p.step : mode_ == XAxisMode::Epoch ? p.epoch : p.time;
}

void ChartView::placeMarker(Marker& m) {
  const double x = xOf(m.x);
  m.line->point1->setCoords(x, 0);
  m.line->point2->setCoords(x, 1);
  m.label->position->setCoords(x, m.label_y);  // its side of the line: keepMarkerLabelsInside()
}

void ChartView::keepMarkerLabelsInside() {
  const QRect area = plot_->axisRect()->rect();
  for (auto& m : markers_) {
    const QMargins pad = m->label->padding();
    const QFontMetrics metrics(m->label->font());
    const double width = metrics.horizontalAdvance(m->label->text()) + pad.left() + pad.right() + 2;
    // Its left edge: the label ends at the line where the plot has room for
    // it there, else it starts at the line, else it is held inside the plot.
    const double line = plot_->xAxis->coordToPixel(xOf(m->x));
    const double start = line - width >= area.left() ? line - width : line;
    // Kept in plot coordinates, so an export drawn at another size (which
    // lays the plot out again without this hook) still finds it by the data.
    const double left = std::max<double>(area.left(), std::min(start, area.right() - width));
    // It hangs from label_y, but no lower than leaves it whole inside a
    // short plot (a small window's charts), where it ran over the x axis.
    const double height = metrics.height() + pad.top() + pad.bottom() + 2;
    const double top = area.height() > 0 ? std::clamp(1.0 - height / area.height(), 0.0, m->label_y) : m->label_y;
    m->label->position->setCoords(plot_->xAxis->pixelToCoord(left), top);
  }
}

void ChartView::addMarker(const XPoint& x, const QString& text, const QColor& color, double label_y) {
  auto m = std::make_unique<Marker>();
  m->x = x;
  m->label_y = label_y;
  m->line = new QCPItemStraightLine(plot_);
  m->line->setLayer("top");
  m->line->setPen(QPen(color, 2));
  for (auto* p : {m->line->point1, m->line->point2}) {
    p->setTypeX(QCPItemPosition::ptPlotCoords);
    p->setTypeY(QCPItemPosition::ptAxisRectRatio);
  }
  m->label = new QCPItemText(plot_);
  m->label->setLayer("top");
  m->label->position->setTypeX(QCPItemPosition::ptPlotCoords);
  m->label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  m->label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
  m->label->setText(text);
  m->label->setColor(color);
  m->label->setBrush(QColor(255, 255, 255, 220));
  m->label->setPen(QPen(color));
  m->label->setPadding(QMargins(4, 2, 4, 2));
  placeMarker(*m);
  markers_.push_back(std::move(m));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

int ChartView::seriesIndex(const QString& name) const {
  for (size_t i = 0; i < series_.size(); ++i)
    if (series_[i]->name == name) return static_cast<int>(i);
  return -1;
}

QString ChartView::seriesName(int series) const { return series_.at(static_cast<size_t>(series))->name; }

void ChartView::setSeriesLabel(int series, const QString& label) {
  Series& s = *series_.at(static_cast<size_t>(series));
  s.raw->setName(label);
  s.smooth->setName(label);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString ChartView::seriesLabel(int series) const { return series_.at(static_cast<size_t>(series))->raw->name(); }

void ChartView::setSeriesStyle(int series, const Style& style) {
  Series& s = *series_.at(static_cast<size_t>(series));
  s.style = style;
  applyPens(s);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

const ChartView::Style& ChartView::seriesStyle(int series) const { return series_.at(static_cast<size_t>(series))->style; }

const std::vector<double>& ChartView::seriesValues(int series) const { return series_.at(static_cast<size_t>(series))->y; }

int ChartView::pointCount(int series) const {
  return series_.at(static_cast<size_t>(series))->raw->data()->size();
}

void ChartView::setSeriesVisible(int series, bool visible) {
  Series& s = *series_.at(static_cast<size_t>(series));
  s.visible = visible;
  applyPens(s);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool ChartView::seriesVisible(int series) const { return series_.at(static_cast<size_t>(series))->visible; }

QString ChartView::readoutAt(double x) const {
  QStringList lines;
  lines << QStringLiteral("%1 %2").arg(QString::fromLatin1(kXLabels[static_cast<int>(mode_)])).arg(x, 0, 'g', 6);
  for (const auto& sp : series_) {
    const Series& s = *sp;
    if (!s.visible || s.plotted == 0) continue;
    const auto& xs = s.x[static_cast<int>(mode_)];
    // Nothing to read before a series starts or after it ends (an overlaid
    // run that stopped earlier): within half a point's spacing of its ends,
    // or 1% of the axis for a single point.
    const double first = xs[0], last = xs[s.plotted - 1];
    const double slack = std::max(s.plotted > 1 ? (last - first) / static_cast<double>(s.plotted - 1) / 2 : 0.0,
                                  plot_->xAxis->range().size() * 0.01);
    if (x < first - slack || x > last + slack) continue;
    const auto end = xs.begin() + static_cast<std::ptrdiff_t>(s.plotted);
    auto it = std::lower_bound(xs.begin(), end, x);
    if (it == end) --it;
    if (it != xs.begin() && std::abs(*(it - 1) - x) < std::abs(*it - x)) --it;
    const auto i = static_cast<size_t>(it - xs.begin());
    QString value = QString::number(s.y[i], 'g', 5);
    if (i < s.smoothed.size()) value = QString::number(s.smoothed[i], 'g', 5) + " (raw " + value + ")";
    lines << s.name + ": " + value;
  }
  return lines.join('\n');
}

void ChartView::onMouseMove(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) user_view_ = true;  // dragging pans
  pointer_ = event->pos();
  updateReadout();
}

void ChartView::updateReadout() {
  if (pointer_.x() < 0 || !plot_->axisRect()->rect().contains(pointer_)) {
    hideReadout();
    return;
  }
  const double x = plot_->xAxis->pixelToCoord(pointer_.x());
  cross_line_->point1->setCoords(x, 0);
  cross_line_->point2->setCoords(x, 1);
  cross_text_->setText(readoutAt(x));
  cross_line_->setVisible(true);
  cross_text_->setVisible(true);
  plot_->layer("overlay")->replot();
}

void ChartView::hideReadout() {
  if (!cross_line_->visible() && !cross_text_->visible()) return;
  cross_line_->setVisible(false);
  cross_text_->setVisible(false);
  plot_->layer("overlay")->replot();
}

bool ChartView::readoutVisible() const { return cross_line_->visible() && cross_text_->visible(); }

QString ChartView::readoutText() const { return cross_text_->text(); }

bool ChartView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == plot_ && event->type() == QEvent::Leave) {
    pointer_ = QPoint(-1, -1);
    hideReadout();
  }
  return QWidget::eventFilter(watched, event);
}

void ChartView::onLegendClick(QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
  auto* pli = qobject_cast<QCPPlottableLegendItem*>(item);
  if (!pli) return;
  for (size_t i = 0; i < series_.size(); ++i) {
    if (series_[i]->raw == pli->plottable() || series_[i]->smooth == pli->plottable()) {
      setSeriesVisible(static_cast<int>(i), !series_[i]->visible);
      return;
    }
  }
}

namespace {
// A chart that was never shown has no laid-out size; export it at a useful one.
QSize export_size(const QWidget* plot, const QWidget* view) {
  return plot->isVisible() ? plot->size() : QSize(std::max(view->width(), 640), std::max(view->height(), 400));
}

// An exported image shows the data, never where the pointer happened to be.
template <typename Save>
bool without_readout(QCPLayerable* line, QCPLayerable* text, Save save) {
  const bool line_shown = line->visible(), text_shown = text->visible();
  line->setVisible(false);
  text->setVisible(false);
  const bool ok = save();
  line->setVisible(line_shown);
  text->setVisible(text_shown);
  return ok;
}
}  // namespace

bool ChartView::exportPng(const QString& path) {
  const QSize s = export_size(plot_, this);
  return without_readout(cross_line_, cross_text_, [&] { return plot_->savePng(path, s.width(), s.height(), 1.0); });
}

bool ChartView::exportPdf(const QString& path) {
  const QSize s = export_size(plot_, this);
  return without_readout(cross_line_, cross_text_, [&] { return plot_->savePdf(path, s.width(), s.height()); });
}

bool ChartView::exportCsv(const QString& path) const {
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) return false;
  QTextStream out(&file);
  // Long format: series have different x points (per step vs per epoch).
  out << "series,step,epoch,time,value,smoothed\n";
  for (const auto& s : series_) {
    QString name = s->name;
    name.replace('"', "\"\"");
    for (size_t i = 0; i < s->y.size(); ++i) {
      out << '"' << name << "\"," << s->x[0][i] << ',' << s->x[1][i] << ',' << s->x[2][i] << ','
          << QString::number(s->y[i], 'g', 10) << ',';
      if (i < s->smoothed.size()) out << QString::number(s->smoothed[i], 'g', 10);
      out << '\n';
    }
  }
  return out.status() == QTextStream::Ok;
}

void ChartView::exportWithDialog(const QString& kind) {
  const QString filter = kind == "png" ? tr("PNG image (*.png)") : kind == "pdf" ? tr("PDF (*.pdf)") : tr("CSV (*.csv)");
  QString path = QFileDialog::getSaveFileName(this, tr("Export %1").arg(title_), title_ + "." + kind, filter);
  if (path.isEmpty()) return;
  // The file is what its name says: a PDF is never written as "loss.csv".
  if (QFileInfo(path).suffix().compare(kind, Qt::CaseInsensitive) != 0) path += "." + kind;
  if (kind == "png") exportPng(path);
  else if (kind == "pdf") exportPdf(path);
  else exportCsv(path);
}

void ChartView::showContextMenu(const QPoint& pos) {
  QMenu menu(this);
  menu.addAction(tr("Reset view"), this, &ChartView::resetView);
  menu.addAction(log_ ? tr("Linear scale") : tr("Log scale"), this, [this] { setLogScale(!log_); });
  menu.addSeparator();
  menu.addAction(tr("Export PNG…"), this, [this] { exportWithDialog("png"); });
  menu.addAction(tr("Export PDF…"), this, [this] { exportWithDialog("pdf"); });
  menu.addAction(tr("Export CSV…"), this, [this] { exportWithDialog("csv"); });
  menu.exec(plot_->mapToGlobal(pos));
}

}  // namespace strata::ui
