#include "project/RunDirectory.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "project/ProjectFile.h"
#include "train/EventJson.h"

namespace strata {

namespace fs = std::filesystem;

std::string RunDirectory::default_for(const std::string& project_path) {
  fs::path p(project_path);
  fs::path base = p.parent_path() / (p.stem().string() + ".runs");
  std::time_t t = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&t));
  fs::path dir = base / stamp;
  for (int i = 2; fs::exists(dir); ++i) dir = base / (std::string(stamp) + "-" + std::to_string(i));
  return dir.string();
}

std::vector<std::string> RunDirectory::runs_of(const std::string& project_path) {
  fs::path p(project_path);
  fs::path base = p.parent_path() / (p.stem().string() + ".runs");
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(base, ec)) return out;
  for (auto& e : fs::directory_iterator(base, ec))
    if (e.is_directory() && fs::exists(e.path() / "events.jsonl")) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());  // names are timestamps
  return out;
}

RunDirectory::RunDirectory(std::string dir, const RunConfig& config, bool resume) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw bad_input("run folder " + dir_ + ": cannot create (" + ec.message() + ")");
  events_.open(dir_ + "/events.jsonl", std::ios::out | (resume ? std::ios::app : std::ios::trunc));
  if (!events_) throw bad_input("run folder " + dir_ + ": cannot write events.jsonl (is the folder writable?)");
  if (!resume) write_file_atomically(dir_ + "/config.json", project_to_json(config).dump(2) + "\n");
}

RunDirectory::~RunDirectory() { events_.flush(); }

void RunDirectory::emit(const Event& event) {
  events_ << event_to_jsonl(event) << '\n';
  if (auto* s = std::get_if<RunStartedEvent>(&event)) started_ = *s;
  if (auto* e = std::get_if<EpochEvent>(&event)) {
    last_epoch_ = *e;
    have_epoch_ = true;
  }
  // Steps at most a second apart, so a killed run loses at most about a second of them.
  if (flush_.due(event)) events_.flush();
  if (auto* f = std::get_if<FinishedEvent>(&event)) {
    Json m{{"status", status_name(f->status)}, {"message", f->message}, {"steps", f->steps}, {"epochs_completed", f->epochs_completed},
           {"time", f->time}, {"strategy", started_.strategy}, {"replicas", started_.replicas}};
    if (f->status == RunStatus::Failed) m["failure"] = failure_name(f->failure);
    if (have_epoch_) {
      m["final_epoch"] = event_to_json(last_epoch_);
    }
    try {
      write_file_atomically(dir_ + "/metrics.json", m.dump(2) + "\n");
    } catch (const Error&) {
      // The events log already has everything; a missing summary is not fatal.
    }
  }
}

}  // namespace strata
