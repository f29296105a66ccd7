#include "ConsoleReporter.h"

#include <unistd.h>

#include <cmath>

namespace strata {

ConsoleReporter::ConsoleReporter(std::FILE* out) : out_(out), tty_(::isatty(::fileno(out)) != 0) {}

namespace {
// "%.4f" but NaN and infinity spelled plainly (glibc prints "-nan").
std::string loss_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

std::string eta_text(double seconds) {
  if (!(seconds >= 0) || std::isinf(seconds)) return "--:--";
  const int s = static_cast<int>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%02d:%02d", s / 60, s % 60);
  return buf;
}
}  // namespace

void ConsoleReporter::progress(const StepEvent& s, bool final_line) {
  const int64_t total = run_.steps_per_epoch;
  const int width = 24;
  const int filled = total ? static_cast<int>(width * s.epoch_step / total) : width;
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < width) {
    bar.push_back('>');
    bar.append(static_cast<size_t>(width - filled - 1), ' ');
  }
  const double rate = s.samples_per_sec > 0 ? s.samples_per_sec : 0;
  const double remaining_samples = static_cast<double>(total - s.epoch_step) * static_cast<double>(run_.global_batch);
  const double eta = rate > 0 ? remaining_samples / rate : -1;
  std::string replicas;
  if (s.replica_losses.size() > 1) {
    replicas = " [";
    for (size_t i = 0; i < s.replica_losses.size(); ++i) {
      if (i) replicas += ' ';
      replicas += loss_text(s.replica_losses[i]);
    }
    replicas += "]";
  }
  // Parameter servers: how stale the round's gradients were, and who is lost.
  if (s.staleness) {
    replicas += "  staleness " + std::to_string(*s.staleness);
    for (int w : s.lost_workers) replicas += " (worker " + std::to_string(w) + " lost)";
  }
  std::fprintf(out_, "%s%*lld/%lld [%s] loss %s%s  %.0f samples/s  ETA %s%s", tty_ ? "\r\033[K" : "",
               static_cast<int>(std::to_string(total).size()), static_cast<long long>(s.epoch_step),
               static_cast<long long>(total), bar.c_str(), loss_text(s.loss).c_str(), replicas.c_str(), rate, eta_text(eta).c_str(),
               tty_ && !final_line ? "" : "\n");
  std::fflush(out_);
}

void ConsoleReporter::emit(const Event& event) {
  if (auto* r = std::get_if<RunStartedEvent>(&event)) {
    run_ = *r;
    std::string devs;
    for (auto& d : r->devices) devs += (devs.empty() ? "" : ",") + d;
    std::fprintf(out_, "Strata: %s on %s | strategy %s, %d replica%s (%s), global batch %lld, %lld steps/epoch, %lld params\n",
                 r->project.c_str(), r->dataset.c_str(), r->strategy.c_str(), r->replicas, r->replicas == 1 ? "" : "s",
                 devs.c_str(), static_cast<long long>(r->global_batch), static_cast<long long>(r->steps_per_epoch),
                 static_cast<long long>(r->params));
    if (r->servers > 0)
      std::fprintf(out_, "parameter servers: %d, staleness bound %s | %s\n", r->servers,
                   r->staleness_bound ? std::to_string(*r->staleness_bound).c_str() : "none (asynchronous)", r->shards.c_str());
  } else if (auto* s = std::get_if<StepEvent>(&event)) {
    if (s->epoch_step == 1) std::fprintf(out_, "Epoch %d/%d\n", s->epoch, run_.epochs);
    last_step_ = *s;
    bar_open_ = true;
    const int64_t total = std::max<int64_t>(1, run_.steps_per_epoch);
    // On a terminal redraw at most ~20 times a second; in a log, every ~10%.
    const bool due = tty_ ? (s->time - last_draw_ >= 0.05 || s->epoch_step == total)
                          : (s->epoch_step * 10 / total != last_printed_step_ * 10 / total || s->epoch_step == total);
    if (due) {
      progress(*s, s->epoch_step == total);
      last_draw_ = s->time;
      last_printed_step_ = s->epoch_step;
      if (s->epoch_step == total) bar_open_ = false;
    }
  } else if (auto* e = std::get_if<EpochEvent>(&event)) {
    if (bar_open_) {
      progress(last_step_, true);
      bar_open_ = false;
    }
    std::fprintf(out_, "Epoch %d: loss %.4f, accuracy %.4f", e->epoch, e->loss, e->accuracy);
    if (e->val_loss) std::fprintf(out_, ", val_loss %.4f, val_accuracy %.4f", *e->val_loss, *e->val_accuracy);
    std::fprintf(out_, " (%.1f s, %.0f samples/s)\n", e->time, e->samples_per_sec);
    last_printed_step_ = -1;
  } else if (auto* l = std::get_if<LogEvent>(&event)) {
    if (bar_open_ && tty_) std::fprintf(out_, "\n");
    std::fprintf(out_, "%s%s\n", l->level == "info" ? "" : (l->level + ": ").c_str(), l->message.c_str());
  } else if (auto* c = std::get_if<CheckpointEvent>(&event)) {
    std::fprintf(out_, "checkpoint: %s (step %lld)\n", c->path.c_str(), static_cast<long long>(c->step));
  } else if (auto* f = std::get_if<FinishedEvent>(&event)) {
    if (bar_open_ && tty_) std::fprintf(out_, "\n");
    // "completed 10 epochs (…)", "stopped by request after …", "failed: …",
    // "completed: stopped early after …": the status once, never twice.
    const char* status = status_name(f->status);
    const bool says_status = f->message.rfind(status, 0) == 0;
    std::fprintf(out_, "%s%s%s (%lld %s, %.1f s)\n", says_status ? "" : status, says_status ? "" : ": ", f->message.c_str(),
                 static_cast<long long>(f->steps), f->steps == 1 ? "step" : "steps", f->time);
  }
  std::fflush(out_);
}

}  // namespace strata
