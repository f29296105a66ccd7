#include "RunHistory.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/Error.h"
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

namespace {
std::string summarize(const RunSeries& s) {
  std::string out;
  if (s.started) out += s.started->strategy + " x" + std::to_string(s.started->replicas);
  out += out.empty() ? "" : " · ";
  out += s.finished ? s.finished->status : std::string("interrupted");
  out += " · " + std::to_string(s.step.size()) + " steps";
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
    r.summary = summarize(load_run(r.dir));
    out.push_back(std::move(r));
  }
  // Folder names are time stamps, so name order is time order.
  std::sort(out.begin(), out.end(), [](const RunRecord& a, const RunRecord& b) { return a.name > b.name; });
  return out;
}

}  // namespace strata::ui
