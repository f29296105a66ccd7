// The NHWC image kernels (CudaImageKernels.cu) on the emulated GPU against
// the CPU backend, over windows with every kind of padding and stride and
// both of each launcher's paths: four channels a thread (channels % 4 == 0
// and 16-byte aligned data) or one, and for max pooling the tiled kernels
// (windows that tile the image exactly). Max pooling reads values with
// ties (the first maximum wins on both sides).
#include "TestImageKernels.h"

#include <QtTest/QtTest>
#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "Comparison.h"
#include "backend/Backend.h"
#include "backend/cuda/CudaKernels.h"
#include "engine/WindowCase.h"

using namespace strata;
using namespace emutest;
using testutil::make_case_window;
using testutil::WindowCase;

namespace {

constexpr int kRandomWindows = 60;

const WindowCase kWindows[] = {
    {"3x3 s1 same", 2, 9, 7, 5, 3, 3, 1, 1, WindowCase::Same},
    {"3x3 s2 same, even size", 2, 8, 6, 4, 3, 3, 2, 2, WindowCase::Same},
    {"2x2 s2 valid, tiles the image", 6, 8, 6, 8, 2, 2, 2, 2, WindowCase::Valid},
    {"2x2 s2 valid, odd size", 2, 7, 5, 8, 2, 2, 2, 2, WindowCase::Valid},
    {"3x2 kernel, strides 2x1, same", 2, 7, 6, 3, 3, 2, 2, 1, WindowCase::Same},
    {"4x4 s2, explicit padding 1,1", 1, 10, 9, 4, 4, 4, 2, 2, WindowCase::Explicit, 1, 1},
    {"3x3 s3 valid, tiles the image, 1 channel", 3, 9, 6, 1, 3, 3, 3, 3, WindowCase::Valid},
    {"1x1 s2 valid", 2, 7, 5, 6, 1, 1, 2, 2, WindowCase::Valid},
};

int64_t input_size(const Window2D& w) { return w.batch * w.height * w.width * w.channels; }
int64_t output_size(const Window2D& w) { return w.batch * w.out_h * w.out_w * w.channels; }
int64_t patch_size(const Window2D& w) { return w.batch * w.out_h * w.out_w * w.kernel_h * w.kernel_w * w.channels; }

// Buffers one float past malloc's 16-byte alignment where `offset` is 1:
// the launchers then take their one-float paths.
struct Shifted {
  std::vector<float> storage;
  int offset;
  Shifted(std::vector<float> v, int off) : offset(off) {
    storage.assign(static_cast<size_t>(off), 0.0f);
    storage.insert(storage.end(), v.begin(), v.end());
  }
  float* data() { return storage.data() + offset; }
  std::vector<float> values() const { return {storage.begin() + offset, storage.end()}; }
};

// Each check compares one window's kernels with the CPU backend's; a
// failure is QFAIL's, so the caller stops at QTest::currentTestFailed().
void check_im2col_col2im(const Window2D& w, const std::string& name) {
  for (int offset : {0, 1}) {
    const std::string what = name + (offset ? " unaligned" : "");
    Shifted x(uniform(input_size(w), -1.0f, 1.0f), offset), col(poisoned(patch_size(w)), offset);
    auto cpu_col = poisoned(patch_size(w));
    cuda_emu::im2col(kStream, w, x.data(), col.data());
    cpu_backend().im2col(w, x.data(), cpu_col.data());
    EMU_EXPECT(close(col.values(), cpu_col, kExact, "col"), "im2col " + what);
    Shifted dcol(uniform(patch_size(w), -1.0f, 1.0f), offset), dx(poisoned(input_size(w)), offset);
    auto cpu_dx = poisoned(input_size(w));
    cuda_emu::col2im(kStream, w, dcol.data(), dx.data());
    cpu_backend().col2im(w, dcol.data(), cpu_dx.data());
    EMU_EXPECT(close(dx.values(), cpu_dx, kElementwise, "dx"), "col2im " + what);
    EMU_EXPECT_CLEAN(what);
  }
}

void check_max_pool(const Window2D& w, const std::string& name) {
  for (int offset : {0, 1})
    for (bool with_bias : {false, true})
      for (bool relu : {false, true}) {
        const std::string what = name + (offset ? " unaligned" : "") + (with_bias ? " bias" : "") + (relu ? " relu" : "");
        // Values in {-2, ..., 1}: ties in most windows, and negative maxima for the relu.
        auto xs = uniform(input_size(w), -2.0f, 2.0f);
        for (auto& v : xs) v = std::floor(v);
        const auto bias = uniform(w.channels, -1.0f, 1.0f);
        const float* b = with_bias ? bias.data() : nullptr;
        const Activation act = relu ? Activation::Relu : Activation::None;
        Shifted x(xs, offset), y(poisoned(output_size(w)), offset);
        std::vector<int32_t> argmax_storage(static_cast<size_t>(output_size(w) + offset), -5);
        int32_t* argmax = argmax_storage.data() + offset;
        auto cpu_y = poisoned(output_size(w));
        std::vector<int32_t> cpu_argmax(static_cast<size_t>(output_size(w)), -5);
        cuda_emu::max_pool(kStream, w, x.data(), b, relu, y.data(), argmax);
        cpu_backend().max_pool(w, x.data(), b, act, cpu_y.data(), cpu_argmax.data());
        EMU_EXPECT(close(y.values(), cpu_y, kExact, "y"), "max_pool " + what);
        EMU_EXPECT(close(std::vector<int32_t>(argmax, argmax + output_size(w)), cpu_argmax, kExact, "argmax"),
                   "max_pool " + what);
        // The backward pass of the CPU's argmax on both sides.
        Shifted dy(uniform(output_size(w), -1.0f, 1.0f), offset), dx(poisoned(input_size(w)), offset);
        std::copy(cpu_argmax.begin(), cpu_argmax.end(), argmax);
        auto cpu_dx = poisoned(input_size(w));
        cuda_emu::max_pool_backward(kStream, w, dy.data(), argmax, dx.data());
        cpu_backend().max_pool_backward(w, dy.data(), cpu_argmax.data(), cpu_dx.data());
        EMU_EXPECT(close(dx.values(), cpu_dx, kElementwise, "dx"), "max_pool_backward " + what);
        EMU_EXPECT_CLEAN(what);
      }
}

void check_avg_pool(const Window2D& w, const std::string& name) {
  const auto x = uniform(input_size(w), -1.0f, 1.0f), dy = uniform(output_size(w), -1.0f, 1.0f);
  auto y = poisoned(output_size(w)), cpu_y = y, dx = poisoned(input_size(w)), cpu_dx = dx;
  cuda_emu::avg_pool(kStream, w, x.data(), y.data());
  cpu_backend().avg_pool(w, x.data(), cpu_y.data());
  EMU_EXPECT(close(y, cpu_y, kElementwise, "y"), "avg_pool " + name);
  cuda_emu::avg_pool_backward(kStream, w, dy.data(), dx.data());
  cpu_backend().avg_pool_backward(w, dy.data(), cpu_dx.data());
  EMU_EXPECT(close(dx, cpu_dx, kElementwise, "dx"), "avg_pool_backward " + name);
  EMU_EXPECT_CLEAN(name);
}

// A window drawn at random: sizes 1 to 13, kernels 1 to 5 (at most the
// image for "valid"), strides 1 to 3, channels around the four-a-thread
// path's boundary, and every padding kind (explicit padding below the
// kernel, so every window holds a pixel of the image). One in four tiles
// the image exactly, the tiled max pooling's case.
WindowCase random_window(std::string& name) {
  static const int64_t kChannels[] = {1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 32};
  WindowCase c{};
  c.batch = 1 + below(3);
  c.channels = kChannels[below(std::size(kChannels))];
  c.kh = 1 + below(5);
  c.kw = 1 + below(5);
  c.sh = 1 + below(3);
  c.sw = 1 + below(3);
  c.pad = static_cast<WindowCase::Pad>(below(3));
  if (below(4) == 0) {  // tiles: stride = kernel, the size a multiple of it
    c.pad = WindowCase::Valid;
    c.sh = c.kh;
    c.sw = c.kw;
    c.height = c.kh * (1 + below(4));
    c.width = c.kw * (1 + below(4));
  } else {
    if (c.pad == WindowCase::Explicit) {
      c.pad_top = below(c.kh);
      c.pad_left = below(c.kw);
    }
    // "valid" and explicit windows need the kernel to fit the padded image.
    const int64_t least_h = c.pad == WindowCase::Same ? 1 : std::max<int64_t>(1, c.kh - 2 * c.pad_top),
                  least_w = c.pad == WindowCase::Same ? 1 : std::max<int64_t>(1, c.kw - 2 * c.pad_left);
    c.height = least_h + below(14 - least_h);
    c.width = least_w + below(14 - least_w);
  }
  static const char* const kPads[] = {" valid", " same", " explicit"};
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on a long
  // chain of string concatenations.
  auto add = [&name](const char* text, int64_t v) { name.append(text).append(std::to_string(v)); };
  name = "random";
  add(" ", c.batch);
  add("x", c.height);
  add("x", c.width);
  add("x", c.channels);
  add(" k", c.kh);
  add("x", c.kw);
  add(" s", c.sh);
  add("x", c.sw);
  name.append(kPads[c.pad]);
  if (c.pad == WindowCase::Explicit) {
    add(" ", c.pad_top);
    add(",", c.pad_left);
  }
  return c;
}

}  // namespace

void TestImageKernels::im2col_col2im() {
  for (const WindowCase& c : kWindows) {
    check_im2col_col2im(make_case_window(c), c.name);
    if (QTest::currentTestFailed()) return;
  }
}

void TestImageKernels::max_pool() {
  for (const WindowCase& c : kWindows) {
    check_max_pool(make_case_window(c), c.name);
    if (QTest::currentTestFailed()) return;
  }
}

void TestImageKernels::avg_pool() {
  for (const WindowCase& c : kWindows) {
    check_avg_pool(make_case_window(c), c.name);
    if (QTest::currentTestFailed()) return;
  }
}

void TestImageKernels::random_windows() {
  for (int i = 0; i < kRandomWindows; ++i) {
    std::string name;
    const Window2D w = make_case_window(random_window(name));
    for (auto check : {check_im2col_col2im, check_max_pool, check_avg_pool}) {
      try {
        check(w, name);
      } catch (const std::exception& e) {
        QFAIL(qPrintable(QString::fromStdString(name + ": " + e.what())));
      }
      if (QTest::currentTestFailed()) return;
    }
  }
}
