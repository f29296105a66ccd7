#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/HugePages.h"
#include "data/Batch.h"

namespace strata {

class BatchPipeline;

// An in-memory labelled dataset. Images stay uint8 (a quarter of the memory)
// and become floats only per batch; numeric tables are held as floats.
// Normalisation is applied when a batch is gathered: x' = (x * scale - mean) / std.
class Dataset {
public:
  static Dataset from_uint8(Shape example_shape, std::vector<uint8_t> pixels, std::vector<int32_t> labels,
                            int num_classes);
  // Pixels already on huge pages (a file's payload, read_idx) are kept, not copied.
  static Dataset from_uint8(Shape example_shape, HugePageVector<uint8_t> pixels, std::vector<int32_t> labels,
                            int num_classes);
  static Dataset from_float(Shape example_shape, std::vector<float> values, std::vector<int32_t> labels,
                            int num_classes);
  // A dataset from tensors, as tf.data.Dataset.from_tensor_slices((x, y)).
  static Dataset from_tensors(const Tensor& features, const Tensor& labels);

  int64_t size() const { return static_cast<int64_t>(labels_.size()); }
  const Shape& example_shape() const { return info_.example_shape; }
  int num_classes() const { return info_.num_classes; }
  bool is_uint8() const { return !pixels_.empty() || values_.empty(); }
  std::span<const int32_t> labels() const { return labels_; }
  // Raw uint8 example (images only), for previews.
  std::span<const uint8_t> pixels(int64_t index) const;

  // Batch of the given examples, features converted and normalised. With
  // raw_pixels an image dataset keeps its uint8 features (a quarter of the
  // bytes to copy to a device), for Backend::pixels_to_float with scale(),
  // mean() and inv_std() to convert where they will be used.
  Batch gather(std::span<const int64_t> indices, bool raw_pixels = false) const;
  bool has_pixels() const { return !pixels_.empty(); }
  // Every example's uint8 pixels, row after row (images only).
  std::span<const uint8_t> all_pixels() const { return {pixels_.data(), pixels_.size()}; }
  float scale() const { return info_.scale; }
  const std::vector<float>& mean() const { return info_.mean; }  // empty: no standardisation
  const std::vector<float>& inv_std() const { return info_.inv_std; }
  // Examples [begin, end).
  Batch range(int64_t begin, int64_t end) const;

  // Per-feature standardisation from this dataset's statistics (CSV features).
  void standardize_from(const Dataset& reference);
  void set_scale(float scale) { info_.scale = scale; }
  // Splits off the last `fraction` of examples (Keras' validation_split).
  std::pair<Dataset, Dataset> split(double fraction) const;
  // Examples [begin, end) as a new dataset (worker shards, subsets).
  Dataset subset(int64_t begin, int64_t end) const;
  std::vector<int64_t> class_counts() const;

  // tf.data style chaining: Dataset::from_tensors(x, y).shuffle(n, seed).batch(64).
  // shuffle() records a seeded full reshuffle every epoch (the buffer size is
  // accepted for familiarity; the shuffle is always uniform over the dataset).
  Dataset shuffle(int64_t buffer_size, uint64_t seed) const&;
  Dataset shuffle(int64_t buffer_size, uint64_t seed) &&;
  std::shared_ptr<BatchPipeline> batch(int64_t batch_size, bool drop_remainder = false) const&;
  std::shared_ptr<BatchPipeline> batch(int64_t batch_size, bool drop_remainder = false) &&;

private:
  // Everything but the examples: subset() copies it whole and only its
  // range of the examples.
  struct Info {
    Shape example_shape;
    std::vector<float> mean, inv_std;  // per feature, empty = none
    float scale = 1.0f;
    int num_classes = 0;
    bool shuffle = false;
    uint64_t shuffle_seed = 0;
  };
  Info info_;
  // Gathered at random rows: on huge pages (core/HugePages.h).
  HugePageVector<uint8_t> pixels_;
  HugePageVector<float> values_;
  std::vector<int32_t> labels_;
};

// Train and optional test split of one source.
struct DatasetSplits {
  Dataset train;
  std::shared_ptr<Dataset> test;  // null when the source has no test split
  std::string description;
};

}  // namespace strata
