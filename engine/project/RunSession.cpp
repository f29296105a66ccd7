#include "project/RunSession.h"

#include <filesystem>

#include "core/Error.h"
#include "project/ProjectFile.h"
#include "project/RunDirectory.h"

namespace strata {

RunSession::RunSession(RunConfig config, EventSink& sink) : trainer_(std::move(config), sink_) { sink_.add(&sink); }

RunSession::~RunSession() = default;

void RunSession::prepare() {
  trainer_.prepare();
  if (cluster().size() > 1) check_ranks_agree();
}

void RunSession::check_ranks_agree() {
  // Every rank must train the same project, or the collectives would mix
  // different models, batches or updates.
  const auto digest = agreement_digest(trainer_.config());
  std::vector<double> mine;
  for (const auto& [part, crc] : digest) mine.push_back(static_cast<double>(crc));
  const auto all = cluster().all_gather(mine);
  for (size_t r = 1; r < all.size() / mine.size(); ++r)
    for (size_t p = 0; p < mine.size(); ++p)
      if (all[r * mine.size() + p] != all[p])
        throw bad_input("rank " + std::to_string(r) + " was given a different project than rank 0: its " + digest[p].first +
                        " settings differ (every rank must train the same model on the same data with the same batch "
                        "size, seed, optimizer and strategy)");
}

void RunSession::open(const RunFolderOptions& options) {
  const bool resume = !options.resume_from.empty();
  // Rank 0 reports for every rank: only it writes the folder.
  if (!options.dir.empty() && cluster().rank() == 0) {
    dir_ = std::make_unique<RunDirectory>(options.dir, trainer_.config(), resume);
    // The folder hears each event first: whoever reads it after hearing an
    // event (the dashboard's history once a run is "Completed") finds it
    // written there, metrics.json included.
    sink_.add_first(dir_.get());
    trainer_.enable_checkpoints(dir_->checkpoints());
    // A stored run keeps its timeline beside its events; a resumed one
    // adds a file rather than replace what the first part recorded.
    if (trainer_.config().trace.enabled && trainer_.config().trace.file.empty()) {
      std::string file = dir_->path() + "/trace.json";
      for (int n = 2; std::filesystem::exists(file); ++n) file = dir_->path() + "/trace-" + std::to_string(n) + ".json";
      trainer_.write_trace_to(file);
    }
    if (options.notes) {
      RunNotes n = read_run_notes(dir_->path());
      if (!options.notes->name.empty()) n.name = options.notes->name;
      if (!options.notes->tags.empty()) n.tags = options.notes->tags;
      write_run_notes(dir_->path(), n);
    }
  }
  if (resume) resumed_ = trainer_.restore(options.resume_from);
}

}  // namespace strata
