#pragma once
// The convolution ways a device's backend chose (Backend::convolution_choices)
// as a table for the bench section: for each shape and direction the way
// kept and what every way it raced took, so a report says which direction
// of which layer is slow, and what the alternatives cost, without a
// profiler run.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "backend/Backend.h"

namespace strata::gpu_check {

// The choices for batches in `batches` (all when empty), in the order made;
// a sentence saying so when there are none (a backend that does not race).
std::string convolution_choices_table(const std::vector<ConvolutionChoice>& choices, const std::set<int64_t>& batches);

}  // namespace strata::gpu_check
