#include "RunSeries.h"

#include <algorithm>
#include <cmath>

namespace strata::ui {

double RunSeries::epoch_position(const StepEvent& s) const {
  const int64_t per_epoch = started ? started->steps_per_epoch : 0;
  if (per_epoch <= 0) return static_cast<double>(s.epoch);
  return static_cast<double>(s.epoch - 1) + static_cast<double>(s.epoch_step) / static_cast<double>(per_epoch);
}

int RunSeries::lost_worker_count() const {
  return static_cast<int>(std::count_if(lost_at.begin(), lost_at.end(), [](const auto& at) { return at.has_value(); }));
}

namespace {
// Columns start at the first step that has the figure and are padded with
// NaN, so a log that mixes in steps without it still lines up with `step`.
void add_parameter_server(RunSeries& r, const StepEvent& s, size_t n) {
  if (s.staleness || !r.staleness.empty()) {
    r.staleness.resize(n, std::nan(""));
    r.staleness.push_back(s.staleness ? static_cast<double>(*s.staleness) : std::nan(""));
  }
  if (r.server_updates.size() < s.server_updates_per_sec.size()) r.server_updates.resize(s.server_updates_per_sec.size());
  for (size_t k = 0; k < r.server_updates.size(); ++k) {
    auto& col = r.server_updates[k];
    col.resize(n, std::nan(""));
    col.push_back(k < s.server_updates_per_sec.size() ? s.server_updates_per_sec[k] : std::nan(""));
  }
  if (!s.worker_steps.empty()) r.worker_steps = s.worker_steps;
  for (int w : s.lost_workers) {
    if (w < 0) continue;
    const auto i = static_cast<size_t>(w);
    if (r.lost_at.size() <= i) r.lost_at.resize(i + 1);
    if (!r.lost_at[i]) r.lost_at[i] = s.step;
  }
}
}  // namespace

void RunSeries::add(const Event& event) {
  if (auto* rs = std::get_if<RunStartedEvent>(&event)) {
    started = *rs;
    replica_loss.assign(static_cast<size_t>(std::max(1, rs->replicas)), {});
  } else if (auto* s = std::get_if<StepEvent>(&event)) {
    // A log without run_started (or with fewer replicas) still loads.
    if (replica_loss.size() < s->replica_losses.size()) replica_loss.resize(s->replica_losses.size());
    const size_t n = step.size();
    step.push_back(static_cast<double>(s->step));
    epoch_pos.push_back(epoch_position(*s));
    time.push_back(s->time);
    loss.push_back(s->loss);
    accuracy.push_back(s->accuracy);
    lr.push_back(s->lr);
    samples_per_sec.push_back(s->samples_per_sec);
    for (size_t r = 0; r < replica_loss.size(); ++r) {
      auto& col = replica_loss[r];
      col.resize(n, std::nan(""));
      col.push_back(r < s->replica_losses.size() ? s->replica_losses[r] : std::nan(""));
    }
    if (!diverged_at && !std::isfinite(s->loss)) diverged_at = n;
    add_parameter_server(*this, *s, n);
  } else if (auto* e = std::get_if<EpochEvent>(&event)) {
    epochs.push_back(*e);
  } else if (auto* f = std::get_if<FinishedEvent>(&event)) {
    finished = *f;
  }
}

}  // namespace strata::ui
