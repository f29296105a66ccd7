#include "RunHistory.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "CheckpointEvaluation.h"
#include "core/Error.h"
#include "core/ShortestDecimal.h"
#include "train/EventJson.h"

namespace strata::ui {

namespace fs = std::filesystem;

std::string runs_folder_for(const std::string& project_path) {
  fs::path p(project_path);
  return (p.parent_path() / (p.stem().string() + ".runs")).string();
}

RunSeries load_run(const std::string& run_dir, int* bad_lines) {
  RunSeries series;
  series.label = fs::path(run_dir).filename().string();
  std::ifstream in(fs::path(run_dir) / "events.jsonl");
  std::string line;
  int bad = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      series.add(event_from_jsonl(line));
    } catch (const std::exception&) {
      ++bad;
    }
  }
  if (bad_lines) *bad_lines = bad;
  return series;
}

std::vector<Event> events_until(const std::string& run_dir, int64_t step) {
  std::vector<Event> out;
  std::ifstream in(fs::path(run_dir) / "events.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Event e;
    try {
      e = event_from_jsonl(line);
    } catch (const std::exception&) {
      continue;
    }
    if (std::holds_alternative<RunStartedEvent>(e)) {
      if (out.empty()) out.push_back(e);  // the first attempt's description
      continue;
    }
    // Only what the charts draw; logs and checkpoints of the old attempt
    // are in the file, not in the prelude.
    if (out.empty()) continue;
    if (auto* s = std::get_if<StepEvent>(&e)) {
      if (s->step > step) continue;
      // A later attempt repeating steps replaces them and what followed.
      while (out.size() > 1) {
        const auto* st = std::get_if<StepEvent>(&out.back());
        const auto* ep = std::get_if<EpochEvent>(&out.back());
        if ((st && st->step >= s->step) || (ep && ep->epoch >= s->epoch)) out.pop_back();
        else break;
      }
    } else if (auto* ep = std::get_if<EpochEvent>(&e)) {
      // An epoch summary belongs to the prelude only if its steps do.
      const auto* st = std::get_if<StepEvent>(&out.back());
      if (!st || st->epoch != ep->epoch || st->step > step) continue;
    } else {
      continue;
    }
    out.push_back(std::move(e));
  }
  return out;
}

namespace {
// As Wording.h's counted(), for this file's std::string summaries.
std::string counted(size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

// `status`: the record's status_text(), derived once from the finished event.
std::string summarize(const RunSeries& s, const std::string& status) {
  std::string out;
  if (s.started) out += s.started->strategy + " x" + std::to_string(s.started->replicas);
  if (s.started && s.started->servers > 0)
    out += " · " + counted(static_cast<size_t>(s.started->servers), "server", "servers");
  out += out.empty() ? "" : " · ";
  out += status;
  out += " · " + counted(s.step.size(), "step", "steps");
  if (const int lost = s.lost_worker_count(); lost > 0)
    out += " · " + counted(static_cast<size_t>(lost), "worker lost", "workers lost");
  if (!s.epochs.empty()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " · loss %.4g", s.epochs.back().loss);
    out += buf;
    if (s.epochs.back().val_accuracy) {
      std::snprintf(buf, sizeof buf, " · val acc %.3f", *s.epochs.back().val_accuracy);
      out += buf;
    }
  }
  return out;
}
}  // namespace

std::string RunRecord::status_text() const {
  if (!status) return "interrupted";
  std::string text = status_name(*status);
  if (*status != RunStatus::Failed || failure == FailureKind::None) return text;
  std::string why = failure_name(failure);  // the event stream's word: out_of_device_memory
  std::replace(why.begin(), why.end(), '_', ' ');
  return text + ": " + why;
}

std::vector<RunRecord> list_runs(const std::string& project_path) {
  std::vector<RunRecord> out;
  std::error_code ec;
  const fs::path base = runs_folder_for(project_path);
  if (!fs::is_directory(base, ec)) return out;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    if (!entry.is_directory() || !fs::exists(entry.path() / "events.jsonl")) continue;
    RunRecord r;
    r.dir = entry.path().string();
    r.name = entry.path().filename().string();
    const RunSeries series = load_run(r.dir);
    r.strategy = series.started ? series.started->strategy : std::string();
    if (series.finished) {
      r.status = series.finished->status;
      r.failure = series.finished->failure;
    }
    r.summary = summarize(series, r.status_text());
    r.has_checkpoint = has_checkpoint(r.dir);
    r.steps = static_cast<int64_t>(series.step.size());
    for (const EpochEvent& e : series.epochs) {
      r.epochs_completed = std::max(r.epochs_completed, e.epoch);
      if (e.val_accuracy && (!r.best_val_accuracy || *e.val_accuracy > *r.best_val_accuracy))
        r.best_val_accuracy = e.val_accuracy;
    }
    if (!series.epochs.empty()) {
      r.final_loss = series.epochs.back().loss;
      r.final_val_accuracy = series.epochs.back().val_accuracy;
    }
    try {
      r.notes = read_run_notes(r.dir);
    } catch (const std::exception& e) {
      r.notes_error = e.what();
    }
    try {
      const RunConfig c = run_config(r.dir, fs::path(project_path).parent_path().string());
      r.batch_size = c.training.batch_size;
      r.optimizer = c.training.optimizer.type;
      r.learning_rate = shortest_decimal(c.training.optimizer.learning_rate);
      r.lr_schedule = c.training.lr_schedule.type;
    } catch (const std::exception&) {
      // A run without a readable config.json lists without its settings.
    }
    out.push_back(std::move(r));
  }
  // Folder names are time stamps, so name order is time order.
  std::sort(out.begin(), out.end(), [](const RunRecord& a, const RunRecord& b) { return a.name > b.name; });
  return out;
}

}  // namespace strata::ui
