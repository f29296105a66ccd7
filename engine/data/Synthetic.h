#pragma once
#include <cstdint>

#include "data/Dataset.h"

namespace strata {

// A learnable classification problem: each class is a Gaussian blob around a
// random centre. Deterministic for a seed.
Dataset make_synthetic(int64_t examples, int64_t features, int classes, uint64_t seed, float noise = 0.5f);

}  // namespace strata
