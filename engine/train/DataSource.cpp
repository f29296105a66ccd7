#include "train/DataSource.h"

#include <filesystem>

#include "core/Error.h"
#include "data/CsvReader.h"
#include "data/FashionMnist.h"
#include "data/IdxReader.h"
#include "data/Synthetic.h"

namespace strata {

namespace {
CsvOptions csv_options(const DatasetConfig& c) {
  CsvOptions o;
  o.label_column = c.label_column;
  o.header = c.header == "yes" ? CsvOptions::Header::Yes : c.header == "no" ? CsvOptions::Header::No : CsvOptions::Header::Auto;
  return o;
}
}  // namespace

std::string class_name(const DatasetConfig& config, int label) {
  if (config.kind == "fashion_mnist") return fashion_mnist_class_name(label);
  return "class " + std::to_string(label);
}

std::string resolve_path(const std::string& p, const std::string& base) {
  if (p.empty() || base.empty() || std::filesystem::path(p).is_absolute()) return p;
  return (std::filesystem::path(base) / p).lexically_normal().string();
}

LoadedData load_data(const DatasetConfig& config, uint64_t seed, const std::string& base_dir) {
  DatasetConfig c = config;
  for (std::string* p : c.paths()) *p = resolve_path(*p, base_dir);
  DatasetSplits splits;
  if (c.kind == "fashion_mnist") {
    splits = load_fashion_mnist(c.path);
  } else if (c.kind == "idx") {
    if (c.train_images.empty() || c.train_labels.empty())
      throw bad_input("dataset.train_images: an idx dataset needs train_images and train_labels files");
    splits.train = load_idx_dataset(c.train_images, c.train_labels);
    if (!c.test_images.empty()) splits.test = std::make_shared<Dataset>(load_idx_dataset(c.test_images, c.test_labels));
    splits.description = "IDX " + c.train_images;
  } else if (c.kind == "csv") {
    if (c.train_csv.empty()) throw bad_input("dataset.train_csv: no CSV file chosen");
    splits.train = load_csv(c.train_csv, csv_options(c));
    if (!c.test_csv.empty()) splits.test = std::make_shared<Dataset>(load_csv(c.test_csv, csv_options(c)));
    splits.description = "CSV " + c.train_csv;
  } else if (c.kind == "synthetic") {
    // Train and test drawn from the same blobs: one dataset, split 80/20.
    Dataset all = make_synthetic(c.synthetic_examples, c.synthetic_features, c.synthetic_classes, seed);
    auto [train, test] = all.split(0.2);
    splits.train = std::move(train);
    splits.test = std::make_shared<Dataset>(std::move(test));
    splits.description = "synthetic (" + std::to_string(c.synthetic_examples) + " x " + std::to_string(c.synthetic_features) +
                         ", " + std::to_string(c.synthetic_classes) + " classes)";
  } else {
    throw bad_input("dataset.kind: unknown '" + c.kind + "' (choose fashion_mnist, idx, csv or synthetic)");
  }

  LoadedData out;
  out.description = splits.description;
  if (c.validation_split > 0.0) {
    auto [train, val] = splits.train.split(c.validation_split);
    out.train = std::make_shared<Dataset>(std::move(train));
    out.validation = std::make_shared<Dataset>(std::move(val));
  } else {
    out.train = std::make_shared<Dataset>(std::move(splits.train));
    out.validation = splits.test;
  }
  if (out.train->size() == 0) throw bad_input("dataset: the training split is empty");
  if (c.standardize) {
    // Statistics from the training split only, applied to both.
    Dataset reference = *out.train;
    out.train->standardize_from(reference);
    if (out.validation) out.validation->standardize_from(reference);
  }
  return out;
}

}  // namespace strata
