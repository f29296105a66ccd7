#include "data/Dataset.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/Error.h"
#include "data/BatchPipeline.h"

namespace strata {

Dataset Dataset::from_uint8(Shape example_shape, std::vector<uint8_t> pixels, std::vector<int32_t> labels,
                            int num_classes) {
  return from_uint8(std::move(example_shape), HugePageVector<uint8_t>(pixels.begin(), pixels.end()), std::move(labels),
                    num_classes);
}

Dataset Dataset::from_uint8(Shape example_shape, HugePageVector<uint8_t> pixels, std::vector<int32_t> labels,
                            int num_classes) {
  Dataset d;
  if (static_cast<int64_t>(pixels.size()) != example_shape.numel() * static_cast<int64_t>(labels.size()))
    throw bad_input("dataset: " + std::to_string(pixels.size()) + " pixels for " + std::to_string(labels.size()) +
                    " examples of shape " + example_shape.str());
  d.info_.example_shape = std::move(example_shape);
  d.pixels_ = std::move(pixels);
  d.labels_ = std::move(labels);
  d.info_.num_classes = num_classes;
  d.info_.scale = 1.0f / 255.0f;
  return d;
}

Dataset Dataset::from_float(Shape example_shape, std::vector<float> values, std::vector<int32_t> labels,
                            int num_classes) {
  Dataset d;
  if (static_cast<int64_t>(values.size()) != example_shape.numel() * static_cast<int64_t>(labels.size()))
    throw bad_input("dataset: " + std::to_string(values.size()) + " values for " + std::to_string(labels.size()) +
                    " examples of shape " + example_shape.str());
  d.info_.example_shape = std::move(example_shape);
  d.values_.assign(values.begin(), values.end());
  d.labels_ = std::move(labels);
  d.info_.num_classes = num_classes;
  return d;
}

Dataset Dataset::from_tensors(const Tensor& features, const Tensor& labels) {
  if (features.shape().rank() < 1 || labels.numel() != features.shape()[0])
    throw bad_input("from_tensors: " + std::to_string(labels.numel()) + " labels for features " + features.shape().str());
  std::vector<int32_t> l(static_cast<size_t>(labels.numel()));
  for (int64_t i = 0; i < labels.numel(); ++i)
    l[static_cast<size_t>(i)] = labels.dtype() == DType::Int32 ? labels.ints()[i] : static_cast<int32_t>(labels.data()[i]);
  int classes = 0;
  for (auto v : l) classes = std::max(classes, v + 1);
  std::vector<int64_t> dims(features.shape().dims().begin() + 1, features.shape().dims().end());
  return from_float(Shape(dims), std::vector<float>(features.data(), features.data() + features.numel()), std::move(l),
                    classes);
}

std::span<const uint8_t> Dataset::pixels(int64_t index) const {
  const auto n = static_cast<size_t>(info_.example_shape.numel());
  if (pixels_.empty()) return {};
  return {pixels_.data() + static_cast<size_t>(index) * n, n};
}

Batch Dataset::gather(std::span<const int64_t> indices, bool raw_pixels) const {
  const int64_t n = static_cast<int64_t>(indices.size());
  const int64_t d = info_.example_shape.numel();
  std::vector<int64_t> dims{n};
  for (auto x : info_.example_shape.dims()) dims.push_back(x);
  const bool raw = raw_pixels && has_pixels();
  Batch b;
  b.features = Tensor::empty(Shape(dims), raw ? DType::UInt8 : DType::Float32);
  b.labels = Tensor::empty(Shape{n}, DType::Int32);
  b.global_batch_size = n;
  float* out = raw ? nullptr : b.features.data();
  for (int64_t i : indices)
    if (i < 0 || i >= size()) throw runtime_error("dataset index " + std::to_string(i) + " out of range");
  // Shuffled rows are scattered over a dataset larger than the caches: each
  // row read waited on memory (the hardware prefetcher cannot guess the next
  // row), which made a batch of 128 Fashion-MNIST images cost ~150 us. The
  // rows a few ahead are asked for while this one is converted.
  constexpr int64_t kAhead = 4;
  const int64_t row_bytes = d * static_cast<int64_t>(pixels_.empty() ? sizeof(float) : 1);
  const char* base = pixels_.empty() ? reinterpret_cast<const char*>(values_.data())
                                     : reinterpret_cast<const char*>(pixels_.data());
  auto prefetch_row = [&](int64_t r) {
    const char* row = base + indices[static_cast<size_t>(r)] * row_bytes;
    for (int64_t off = 0; off < row_bytes; off += 64) __builtin_prefetch(row + off);
  };
  for (int64_t r = 0; r < std::min(n, kAhead); ++r) prefetch_row(r);
  for (int64_t r = 0; r < n; ++r) {
    if (r + kAhead < n) prefetch_row(r + kAhead);
    const int64_t i = indices[static_cast<size_t>(r)];
    b.labels.ints()[r] = labels_[static_cast<size_t>(i)];
    if (raw) {
      std::memcpy(b.features.byte_ptr() + r * d, pixels_.data() + i * d, static_cast<size_t>(d));
      continue;
    }
    float* row = out + r * d;
    if (!pixels_.empty()) {
      const uint8_t* src = pixels_.data() + i * d;
      for (int64_t k = 0; k < d; ++k) row[k] = static_cast<float>(src[k]) * info_.scale;
    } else {
      const float* src = values_.data() + i * d;
      for (int64_t k = 0; k < d; ++k) row[k] = src[k] * info_.scale;
    }
    if (!info_.mean.empty())
      for (int64_t k = 0; k < d; ++k)
        row[k] = (row[k] - info_.mean[static_cast<size_t>(k)]) * info_.inv_std[static_cast<size_t>(k)];
  }
  return b;
}

Batch Dataset::range(int64_t begin, int64_t end) const {
  std::vector<int64_t> idx;
  for (int64_t i = begin; i < end; ++i) idx.push_back(i);
  return gather(idx);
}

void Dataset::standardize_from(const Dataset& ref) {
  const int64_t d = info_.example_shape.numel();
  std::vector<double> sum(static_cast<size_t>(d), 0.0), sq(static_cast<size_t>(d), 0.0);
  const int64_t n = ref.size();
  for (int64_t start = 0; start < n; start += 4096) {
    Batch b = ref.range(start, std::min(n, start + 4096));
    for (int64_t r = 0; r < b.size(); ++r)
      for (int64_t k = 0; k < d; ++k) {
        const double v = b.features.data()[r * d + k];
        sum[static_cast<size_t>(k)] += v;
        sq[static_cast<size_t>(k)] += v * v;
      }
  }
  info_.mean.assign(static_cast<size_t>(d), 0.0f);
  info_.inv_std.assign(static_cast<size_t>(d), 1.0f);
  if (n == 0) return;
  for (size_t k = 0; k < static_cast<size_t>(d); ++k) {
    const double m = sum[k] / static_cast<double>(n);
    const double var = std::max(0.0, sq[k] / static_cast<double>(n) - m * m);
    info_.mean[k] = static_cast<float>(m);
    // Constant columns keep scale 1 instead of dividing by zero.
    info_.inv_std[k] = var > 1e-12 ? static_cast<float>(1.0 / std::sqrt(var)) : 1.0f;
  }
}

Dataset Dataset::subset(int64_t begin, int64_t end) const {
  begin = std::clamp<int64_t>(begin, 0, size());
  end = std::clamp<int64_t>(end, begin, size());
  // Not a copy of *this and then a cut: that would briefly hold the whole
  // dataset twice.
  Dataset d;
  d.info_ = info_;
  const auto per = static_cast<size_t>(info_.example_shape.numel());
  d.labels_.assign(labels_.begin() + begin, labels_.begin() + end);
  const auto first = static_cast<std::ptrdiff_t>(begin * static_cast<int64_t>(per)),
             last = static_cast<std::ptrdiff_t>(end * static_cast<int64_t>(per));
  if (!pixels_.empty()) d.pixels_ = HugePageVector<uint8_t>(pixels_.begin() + first, pixels_.begin() + last);
  else d.values_ = HugePageVector<float>(values_.begin() + first, values_.begin() + last);
  return d;
}

std::pair<Dataset, Dataset> Dataset::split(double fraction) const {
  if (!(fraction >= 0.0 && fraction < 1.0)) throw bad_input("validation_split must be in [0, 1)");
  const int64_t keep = size() - static_cast<int64_t>(std::floor(static_cast<double>(size()) * fraction));
  return {subset(0, keep), subset(keep, size())};
}

Dataset Dataset::shuffle(int64_t buffer_size, uint64_t seed) const& { return Dataset(*this).shuffle(buffer_size, seed); }

Dataset Dataset::shuffle(int64_t buffer_size, uint64_t seed) && {
  if (buffer_size <= 0) throw bad_input("shuffle: buffer size must be positive");
  info_.shuffle = true;
  info_.shuffle_seed = seed;
  return std::move(*this);
}

std::shared_ptr<BatchPipeline> Dataset::batch(int64_t batch_size, bool drop_remainder) const& {
  return Dataset(*this).batch(batch_size, drop_remainder);
}

std::shared_ptr<BatchPipeline> Dataset::batch(int64_t batch_size, bool drop_remainder) && {
  PipelineOptions o;
  o.batch_size = batch_size;
  o.shuffle = info_.shuffle;
  o.seed = info_.shuffle_seed;
  o.drop_remainder = drop_remainder;
  return std::make_shared<BatchPipeline>(std::make_shared<const Dataset>(std::move(*this)), o);
}

std::vector<int64_t> Dataset::class_counts() const {
  std::vector<int64_t> counts(static_cast<size_t>(std::max(info_.num_classes, 0)), 0);
  for (auto l : labels_)
    if (l >= 0 && l < info_.num_classes) counts[static_cast<size_t>(l)]++;
  return counts;
}

}  // namespace strata
