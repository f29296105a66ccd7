#include "ParameterServerCharts.h"

#include "Wording.h"

#include <QHBoxLayout>
#include <QSplitter>
#include <algorithm>
#include <span>

#include "Palette.h"
#include "RunSeries.h"

namespace strata::ui {

namespace {
const QColor kLostColor(150, 150, 150);
const QColor kStalenessColor(148, 103, 189);
const QColor kBoundColor(214, 39, 40);
}  // namespace

ParameterServerCharts::ParameterServerCharts(ChartView* loss, QWidget* parent)
    : QWidget(parent),
      loss_(loss),
      staleness_(new ChartView(tr("Staleness"), tr("rounds behind"))),
      servers_(new ChartView(tr("Server updates/s"), tr("updates/s"))) {
  setObjectName("parameterServerCharts");
  staleness_->setObjectName("stalenessChart");
  staleness_->setWholeValues(true);
  servers_->setObjectName("serverUpdatesChart");
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(staleness_);
  split->addWidget(servers_);
  layout->addWidget(split);
  hide();
}

QString ParameterServerCharts::workerSeriesName(size_t w) { return QStringLiteral("worker %1").arg(w); }

void ParameterServerCharts::beginRun(const RunStartedEvent& e) {
  // Overlays (named after their run folder) stay.
  staleness_->removeSeries(tr("staleness"));
  staleness_->removeSeries(tr("bound"));
  servers_->clear();  // never overlaid: only the live run's servers
  server_series_.clear();
  staleness_series_ = bound_series_ = -1;
  workers_.clear();
  active_ = e.servers > 0;
  bound_ = e.staleness_bound;
  if (active_) {
    ChartView::Style s;
    s.color = kStalenessColor;
    // Whole rounds: smoothing would draw values the bound does not allow.
    s.smoothable = false;
    staleness_series_ = staleness_->addSeries(tr("staleness"), s);
    if (bound_) {
      ChartView::Style b;
      b.color = kBoundColor;
      b.pen = Qt::DashLine;
      b.width = 1.2;
      b.smoothable = false;
      // A series rather than a plot item: the autoscaled y range then always
      // includes the bound, and it switches x axes and exports like the data.
      bound_series_ = staleness_->addSeries(tr("bound (k = %1)").arg(*bound_), b);
    }
    staleness_->setToolTip(bound_ ? tr("The largest number of earlier rounds missing from the weights a worker read, "
                                       "per step; the bound k = %1 (0 = synchronous) caps it")
                                        .arg(*bound_)
                                  : tr("The largest number of earlier rounds missing from the weights a worker read, "
                                       "per step; unbounded (fully asynchronous)"));
    for (int k = 0; k < e.servers; ++k) {
      ChartView::Style line;
      line.color = series_color(static_cast<size_t>(k));
      line.width = 1.2;
      server_series_.push_back(servers_->addSeries(tr("server %1").arg(k), line));
    }
    // "server 0: a b; server 1: c d" -> one line per server.
    servers_->setToolTip(tr("Updates applied per second by each parameter server, over at least 50 ms.\n%1")
                             .arg(QString::fromStdString(e.shards).replace("; ", "\n")));
    workers_.resize(static_cast<size_t>(std::max(0, e.replicas)));
  }
  updateVisibility();
}

void ParameterServerCharts::addStep(const StepEvent& s, const XPoint& x) {
  if (!active_) return;
  if (s.staleness) staleness_->append(staleness_series_, x, *s.staleness);
  if (bound_series_ >= 0) staleness_->append(bound_series_, x, *bound_);
  for (size_t k = 0; k < server_series_.size() && k < s.server_updates_per_sec.size(); ++k)
    servers_->append(server_series_[k], x, s.server_updates_per_sec[k]);
  if (workers_.size() < s.replica_losses.size()) workers_.resize(s.replica_losses.size());
  for (size_t w = 0; w < workers_.size(); ++w) {
    Worker& worker = workers_[w];
    if (w < s.worker_steps.size()) worker.steps = s.worker_steps[w];
    // worker_steps is read a moment after the losses were collected, so a
    // worker may count a slice whose loss is not in this event yet: the
    // loss itself must have arrived too.
    const bool finished_one = w < s.worker_steps.size() ? s.worker_steps[w] > 0 : true;
    if (!worker.has_loss && finished_one && w < s.replica_losses.size() && s.replica_losses[w] != 0.0)
      worker.has_loss = true;
    const bool lost = std::find(s.lost_workers.begin(), s.lost_workers.end(), static_cast<int>(w)) != s.lost_workers.end();
    if (lost != worker.lost) setLost(w, lost, x, s.step);
  }
}

bool ParameterServerCharts::drawsWorker(size_t w) const {
  if (!active_) return true;
  return w >= workers_.size() || (workers_[w].has_loss && !workers_[w].lost);
}

void ParameterServerCharts::setLost(size_t w, bool lost, const XPoint& x, int64_t step) {
  Worker& worker = workers_[w];
  worker.lost = lost;
  const int series = loss_->seriesIndex(workerSeriesName(w));
  if (series < 0) return;
  if (lost) {
    worker.style = loss_->seriesStyle(series);
    ChartView::Style grey = worker.style;
    grey.color = kLostColor;
    grey.pen = Qt::DashLine;
    loss_->setSeriesStyle(series, grey);
    loss_->addMarker(x, tr("worker %1 lost (step %2)").arg(w).arg(step), kLostColor.darker(130));
  } else {
    // Back in a later attempt (a resumed run restarts every worker); the
    // marker stays, it is history.
    loss_->setSeriesStyle(series, worker.style);
  }
}

void ParameterServerCharts::refreshLegend() {
  if (!active_) return;
  for (size_t w = 0; w < workers_.size(); ++w) {
    const int series = loss_->seriesIndex(workerSeriesName(w));
    if (series < 0) continue;
    const Worker& worker = workers_[w];
    QString label = workerSeriesName(w);
    if (worker.lost) label += tr(" (lost)");
    label += " — " + counted(worker.steps, tr("step"), tr("steps"));
    if (loss_->seriesLabel(series) != label) loss_->setSeriesLabel(series, label);
  }
}

void ParameterServerCharts::addOverlay(const RunSeries& run, const QString& label, ChartView::Style style) {
  if (!run.is_parameter_server() || run.staleness.empty()) return;
  style.smoothable = false;
  const int series = staleness_->addSeries(label + " · staleness", style);
  const size_t n = std::min(run.staleness.size(), run.step.size());
  staleness_->appendMany(series, std::span(run.step).first(n), std::span(run.epoch_pos).first(n),
                         std::span(run.time).first(n), std::span(run.staleness).first(n));
  overlays_.push_back(label);
  updateVisibility();
}

void ParameterServerCharts::removeOverlay(const QString& label) {
  const auto it = std::find(overlays_.begin(), overlays_.end(), label);
  if (it == overlays_.end()) return;
  overlays_.erase(it);
  staleness_->removeSeries(label + " · ");
  reindex();
  updateVisibility();
}

void ParameterServerCharts::reindex() {
  // Removing series renumbers the ones after them.
  staleness_series_ = staleness_->seriesIndex(tr("staleness"));
  bound_series_ = bound_ ? staleness_->seriesIndex(tr("bound (k = %1)").arg(*bound_)) : -1;
}

void ParameterServerCharts::clear() {
  staleness_->clear();
  servers_->clear();
  server_series_.clear();
  staleness_series_ = bound_series_ = -1;
  workers_.clear();
  overlays_.clear();
  bound_.reset();
  active_ = false;
  updateVisibility();
}

void ParameterServerCharts::updateVisibility() { setVisible(active_ || !overlays_.empty()); }

}  // namespace strata::ui
