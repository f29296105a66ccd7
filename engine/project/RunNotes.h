#pragma once
// What a person writes about a run, kept in its folder as run.json beside
// config.json and events.jsonl: a name (the folder's time stamp until one is
// given), free-form notes and tags, as W&B runs have.
#include <string>
#include <vector>

namespace strata {

struct RunNotes {
  std::string name;  // empty: the folder's name stands in
  std::string notes;
  std::vector<std::string> tags;
};

// The notes of a run folder; empty ones when it has no run.json. A run.json
// that cannot be read or has wrong fields is bad_input naming the file and
// the field (the run itself stays usable: callers show the message).
RunNotes read_run_notes(const std::string& run_dir);
// Writes run.json atomically; bad_input naming the file if it cannot.
// Tags are trimmed, empty ones and repeats dropped.
void write_run_notes(const std::string& run_dir, const RunNotes& notes);
// "a, b ,,c" -> {"a", "b", "c"}.
std::vector<std::string> parse_tags(const std::string& text);

}  // namespace strata
