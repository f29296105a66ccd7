#pragma once
#include <string>

#include "backend/Backend.h"
#include "core/Shape.h"

namespace strata::nn {

enum class Padding { Valid, Same };

std::string padding_name(Padding p);
bool parse_padding(const std::string& name, Padding& out);

// TF's window arithmetic for an NHWC input (batch dimension optional in
// `input`: pass (H, W, C) and a batch). "valid": out = floor((in - k) / s) + 1;
// "same": out = ceil(in / s), padding split with the odd pixel after.
Window2D make_window(const Shape& hwc, int64_t batch, int64_t kh, int64_t kw, int64_t sh, int64_t sw, Padding padding,
                     const std::string& layer);

}  // namespace strata::nn
