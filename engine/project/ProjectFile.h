#pragma once
#include <string>
#include <vector>

#include "core/AtomicFile.h"
#include "nn/json_fwd.h"
#include "train/RunConfig.h"

namespace strata {

// *.strata project files (docs/project-format.md): JSON with
// "format": "strata-project" and "version". Loading checks every field and
// reports every problem with its JSON path; a newer version is refused whole.
inline constexpr const char* kProjectFormat = "strata-project";
inline constexpr int kProjectVersion = 1;

// All problems found, one per line, each "path: reason". Empty = valid.
std::vector<std::string> validate_project(const Json& j);
// Parses valid JSON into a config; throws bad_input listing every problem.
// Relative dataset paths are resolved against base_dir.
RunConfig project_from_json(const Json& j, const std::string& base_dir = {});
Json project_to_json(const RunConfig& config);

// What every rank of a run across processes must agree on, as a digest
// (CRC-32) per part: "model" (the layers), "dataset" (kind, paths, split,
// normalisation), "training" (batch size, seed, epochs, steps, shuffling,
// optimizer and loss settings), "strategy" (name, replica count, collective
// settings). Threads, prefetch, checkpoints, device indices and the project's
// name may differ between hosts.
std::vector<std::pair<std::string, uint32_t>> agreement_digest(const RunConfig& config);

RunConfig load_project(const std::string& path);
// Atomic: writes PATH.tmp-XXXX, flushes it to disk, renames over PATH. On any
// failure the previous file is untouched and bad_input says why.
void save_project(const RunConfig& config, const std::string& path);

}  // namespace strata
