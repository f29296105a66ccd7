#include "nn/Padding.h"

#include <algorithm>

#include "core/Error.h"

namespace strata::nn {

std::string padding_name(Padding p) { return p == Padding::Same ? "same" : "valid"; }

bool parse_padding(const std::string& name, Padding& out) {
  if (name == "same") out = Padding::Same;
  else if (name == "valid") out = Padding::Valid;
  else return false;
  return true;
}

Window2D make_window(const Shape& hwc, int64_t batch, int64_t kh, int64_t kw, int64_t sh, int64_t sw, Padding padding,
                     const std::string& layer) {
  if (hwc.rank() != 3)
    throw bad_input(layer + " expects images (height, width, channels) per example, got " + hwc.str());
  Window2D w{};
  w.batch = batch;
  w.height = hwc[0];
  w.width = hwc[1];
  w.channels = hwc[2];
  w.kernel_h = kh;
  w.kernel_w = kw;
  w.stride_h = sh;
  w.stride_w = sw;
  auto dim = [&](int64_t in, int64_t k, int64_t s, int64_t& out, int64_t& pad_before) {
    if (padding == Padding::Same) {
      out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>((out - 1) * s + k - in, 0);
      pad_before = total / 2;
    } else {
      if (in < k)
        throw bad_input(layer + ": window " + std::to_string(k) + " is larger than the input size " + std::to_string(in) +
                        " with valid padding");
      out = (in - k) / s + 1;
      pad_before = 0;
    }
  };
  dim(w.height, kh, sh, w.out_h, w.pad_top);
  dim(w.width, kw, sw, w.out_w, w.pad_left);
  return w;
}

}  // namespace strata::nn
