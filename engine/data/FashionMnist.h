#pragma once
#include <optional>
#include <string>

#include "data/Dataset.h"

namespace strata {

// Debian's dataset-fashion-mnist installs here; STRATA_FASHION_MNIST_DIR or an
// explicit directory overrides it.
inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";
std::string fashion_mnist_dir(const std::string& override_dir = {});
// Loads train (60k) and test (10k) splits; bad_input naming the missing file
// and how to get it.
DatasetSplits load_fashion_mnist(const std::string& override_dir = {});
// Class names for labels 0..9.
const char* fashion_mnist_class_name(int label);

}  // namespace strata
