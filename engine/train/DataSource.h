#pragma once
#include "data/Dataset.h"
#include "train/RunConfig.h"

namespace strata {

// Loads the configured dataset's train and validation splits, applying the
// validation split and normalisation. bad_input names the file or field.
struct LoadedData {
  std::shared_ptr<Dataset> train;
  std::shared_ptr<Dataset> validation;  // may be null
  std::string description;
};
// Relative paths are taken relative to base_dir (the project's folder).
LoadedData load_data(const DatasetConfig& config, uint64_t seed, const std::string& base_dir = {});
// A label's display name: Fashion-MNIST's class names, else "class N".
std::string class_name(const DatasetConfig& config, int label);
std::string resolve_path(const std::string& path, const std::string& base_dir);

}  // namespace strata
