#include "RunSeries.h"

#include <cmath>

namespace strata::ui {

double RunSeries::epoch_position(const StepEvent& s) const {
  const int64_t per_epoch = started ? started->steps_per_epoch : 0;
  if (per_epoch <= 0) return static_cast<double>(s.epoch);
  return static_cast<double>(s.epoch - 1) + static_cast<double>(s.epoch_step) / static_cast<double>(per_epoch);
}

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
    lr.push_back(s->lr);
    samples_per_sec.push_back(s->samples_per_sec);
    for (size_t r = 0; r < replica_loss.size(); ++r) {
      auto& col = replica_loss[r];
      col.resize(n, std::nan(""));
      col.push_back(r < s->replica_losses.size() ? s->replica_losses[r] : std::nan(""));
    }
    if (!diverged_at && !std::isfinite(s->loss)) diverged_at = n;
  } else if (auto* e = std::get_if<EpochEvent>(&event)) {
    epochs.push_back(*e);
  } else if (auto* f = std::get_if<FinishedEvent>(&event)) {
    finished = *f;
  }
}

}  // namespace strata::ui
