#pragma once
// A test's image window described as a layer describes it (sizes, kernel,
// strides and TF's "valid" or "same", or explicit padding), and the Window2D
// it makes: shared by the CPU image kernels' tests and the CUDA kernels'
// emulation test, which run their cases through the same arithmetic.
#include <algorithm>
#include <cstdint>

#include "backend/Backend.h"

namespace testutil {

struct WindowCase {
  const char* name;
  int64_t batch, height, width, channels, kh, kw, sh, sw;
  enum Pad { Valid, Same, Explicit } pad;
  int64_t pad_top = 0, pad_left = 0;  // Explicit only
};

// TF's window arithmetic, written here independently of nn/Padding.cpp.
inline strata::Window2D make_case_window(const WindowCase& c) {
  strata::Window2D w{};
  w.batch = c.batch;
  w.height = c.height;
  w.width = c.width;
  w.channels = c.channels;
  w.kernel_h = c.kh;
  w.kernel_w = c.kw;
  w.stride_h = c.sh;
  w.stride_w = c.sw;
  auto dim = [&](int64_t in, int64_t k, int64_t s, int64_t explicit_pad, int64_t& out, int64_t& pad) {
    switch (c.pad) {
      case WindowCase::Valid:
        out = (in - k) / s + 1;
        pad = 0;
        break;
      case WindowCase::Same:
        out = (in + s - 1) / s;
        pad = std::max<int64_t>((out - 1) * s + k - in, 0) / 2;
        break;
      case WindowCase::Explicit:
        out = (in + 2 * explicit_pad - k) / s + 1;
        pad = explicit_pad;
        break;
    }
  };
  dim(c.height, c.kh, c.sh, c.pad_top, w.out_h, w.pad_top);
  dim(c.width, c.kw, c.sw, c.pad_left, w.out_w, w.pad_left);
  return w;
}

}  // namespace testutil
