#pragma once
#include <cstdint>
#include <string>

#include "train/RunConfig.h"

namespace strata {

// Writes a checkpoint's (or run folder's latest) weights as one
// .safetensors file `out`, checked against the project's model first;
// returns the number of parameters written. strata-run --export-weights and
// the dashboard's Export weights both do this.
int64_t export_checkpoint_weights(const RunConfig& config, const std::string& checkpoint, const std::string& out);

}  // namespace strata
