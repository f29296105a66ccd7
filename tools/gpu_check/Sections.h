#pragma once
#include <memory>
#include <vector>

#include "CheckSection.h"

namespace strata::gpu_check {

// Every section, in the order the program runs them by default.
std::vector<std::unique_ptr<CheckSection>> all_sections();

}  // namespace strata::gpu_check
