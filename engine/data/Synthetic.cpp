#include "data/Synthetic.h"

#include "core/Error.h"
#include "core/Rng.h"

namespace strata {

Dataset make_synthetic(int64_t examples, int64_t features, int classes, uint64_t seed, float noise) {
  if (examples <= 0 || features <= 0 || classes < 2)
    throw bad_input("synthetic dataset needs examples > 0, features > 0 and classes >= 2");
  Rng rng(seed);
  std::vector<float> centres(static_cast<size_t>(classes * features));
  for (auto& c : centres) c = 2.0f * rng.normal();
  std::vector<float> values(static_cast<size_t>(examples * features));
  std::vector<int32_t> labels(static_cast<size_t>(examples));
  for (int64_t i = 0; i < examples; ++i) {
    const auto label = static_cast<int32_t>(rng.below(static_cast<uint64_t>(classes)));
    labels[static_cast<size_t>(i)] = label;
    for (int64_t k = 0; k < features; ++k)
      values[static_cast<size_t>(i * features + k)] = centres[static_cast<size_t>(label * features + k)] + noise * rng.normal();
  }
  return Dataset::from_float(Shape{features}, std::move(values), std::move(labels), classes);
}

}  // namespace strata
