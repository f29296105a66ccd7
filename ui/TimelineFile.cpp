#include "TimelineFile.h"

#include "Wording.h"

#include <QFileInfo>
#include <QStringList>
#include <algorithm>
#include <cmath>
#include <iterator>

namespace strata::ui {

using trace::Span;

TimelineFile::TimelineFile(const trace::TraceContents& contents, int steps_shown)
    : path_(QString::fromStdString(contents.path)) {
  for (const Span& s : contents.spans) {
    if (!std::isfinite(s.start_us) || !std::isfinite(s.duration_us)) continue;
    if (s.step < 0) unstepped_.push_back(s);
    else steps_[s.step].push_back(s);
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
  parts << counted(static_cast<qint64>(steps_.size()), tr("step"), tr("steps"));
  if (contents.skipped > 0)
    parts << tr("%1 left out").arg(counted(contents.skipped, tr("unknown span event"), tr("unknown span events")));
  if (contents.spans_left_out > 0) {
    const QString spans = counted(contents.spans_left_out, tr("span"), tr("spans"));
    parts << (contents.first_step_left_out >= 0
                  ? tr("cut at its size limit: %1 left out, from step %2 on").arg(spans).arg(contents.first_step_left_out)
                  : tr("cut at its size limit: %1 left out").arg(spans));
  }
  description_ = tr("%1: %2").arg(QFileInfo(path_).fileName(), parts.join(" · "));
  // The last steps first, as live: where a run's steady state is.
  auto from = steps_.rbegin();
  for (int n = 1; n < steps_shown && from != steps_.rend() && std::next(from) != steps_.rend(); ++n) ++from;
  first_ = from != steps_.rend() ? from->first : 0;
}

bool TimelineFile::setFirstStep(int64_t step) {
  if (first_ == step) return false;
  first_ = step;
  return true;
}

void TimelineFile::window(int n, std::vector<Span>& spans, std::vector<int64_t>& steps) const {
  auto earliest = [](const std::vector<Span>& of_step) {
    double t = HUGE_VAL;
    for (const Span& s : of_step) t = std::min(t, s.start_us);
    return t;
  };
  auto it = steps_.lower_bound(first_);
  // Work of no step (an evaluation, a checkpoint) goes with the steps
  // before it: from the first step drawn (the file's start when that is
  // its first step) until the next step not drawn (the file's end).
  const double lo = it == steps_.begin() || it == steps_.end() ? -HUGE_VAL : earliest(it->second);
  for (int i = 0; it != steps_.end() && i < n; ++it, ++i) {
    spans.insert(spans.end(), it->second.begin(), it->second.end());
    steps.push_back(it->first);
  }
  const double hi = it == steps_.end() ? HUGE_VAL : earliest(it->second);
  for (const Span& s : unstepped_)
    if (s.start_us >= lo && s.start_us < hi) spans.push_back(s);
}

}  // namespace strata::ui
