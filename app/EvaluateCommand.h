#pragma once
#include <string>

#include "train/RunConfig.h"

namespace strata {

// strata-run PROJECT --evaluate CHECKPOINT: loss, accuracy, per-class
// accuracy and the confusion matrix on the project's test split, as text or
// (json = true) one JSON object on stdout. Returns the exit code.
int evaluate_command(const RunConfig& config, const std::string& checkpoint, bool json);

// strata-run PROJECT --export-weights CHECKPOINT OUT.safetensors.
int export_command(const RunConfig& config, const std::string& checkpoint, const std::string& out);

}  // namespace strata
