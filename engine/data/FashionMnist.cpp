#include "data/FashionMnist.h"

#include <cstdlib>
#include <filesystem>

#include "core/Error.h"
#include "data/IdxReader.h"

namespace strata {

std::string fashion_mnist_dir(const std::string& override_dir) {
  if (!override_dir.empty()) return override_dir;
  if (const char* env = std::getenv("STRATA_FASHION_MNIST_DIR"); env && *env) return env;
  return kFashionMnistDefaultDir;
}

namespace {
std::string find_file(const std::string& dir, const std::string& stem) {
  for (const char* ext : {".gz", ""}) {
    std::string p = dir + "/" + stem + ext;
    if (std::filesystem::exists(p)) return p;
  }
  throw bad_input("Fashion-MNIST: " + dir + "/" + stem + ".gz not found (apt install dataset-fashion-mnist, or set the "
                  "dataset path)");
}
}  // namespace

DatasetSplits load_fashion_mnist(const std::string& override_dir) {
  const std::string dir = fashion_mnist_dir(override_dir);
  DatasetSplits s;
  s.train = load_idx_dataset(find_file(dir, "train-images-idx3-ubyte"), find_file(dir, "train-labels-idx1-ubyte"));
  s.test = std::make_shared<Dataset>(
      load_idx_dataset(find_file(dir, "t10k-images-idx3-ubyte"), find_file(dir, "t10k-labels-idx1-ubyte")));
  s.description = "Fashion-MNIST (" + dir + ")";
  return s;
}

const char* fashion_mnist_class_name(int label) {
  static const char* names[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return label >= 0 && label < 10 ? names[label] : "?";
}

}  // namespace strata
