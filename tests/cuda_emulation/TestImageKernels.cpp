// The NHWC image kernels (CudaImageKernels.cu) on the emulated GPU against
// the CPU backend, over windows with every kind of padding and stride and
// both of each launcher's paths: four channels a thread (channels % 4 == 0
// and 16-byte aligned data) or one, and for max pooling the tiled kernels
// (windows that tile the image exactly). Max pooling reads values with
// ties (the first maximum wins on both sides).
#include "TestImageKernels.h"

#include <cmath>
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

}  // namespace

void TestImageKernels::im2col_col2im() {
  for (const WindowCase& c : kWindows)
    for (int offset : {0, 1}) {
      const Window2D w = make_case_window(c);
      const std::string what = std::string(c.name) + (offset ? " unaligned" : "");
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

void TestImageKernels::max_pool() {
  for (const WindowCase& c : kWindows)
    for (int offset : {0, 1})
      for (bool with_bias : {false, true})
        for (bool relu : {false, true}) {
          const Window2D w = make_case_window(c);
          const std::string what = std::string(c.name) + (offset ? " unaligned" : "") + (with_bias ? " bias" : "") +
                                   (relu ? " relu" : "");
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

void TestImageKernels::avg_pool() {
  for (const WindowCase& c : kWindows) {
    const Window2D w = make_case_window(c);
    const auto x = uniform(input_size(w), -1.0f, 1.0f), dy = uniform(output_size(w), -1.0f, 1.0f);
    auto y = poisoned(output_size(w)), cpu_y = y, dx = poisoned(input_size(w)), cpu_dx = dx;
    cuda_emu::avg_pool(kStream, w, x.data(), y.data());
    cpu_backend().avg_pool(w, x.data(), cpu_y.data());
    EMU_EXPECT(close(y, cpu_y, kElementwise, "y"), std::string("avg_pool ") + c.name);
    cuda_emu::avg_pool_backward(kStream, w, dy.data(), dx.data());
    cpu_backend().avg_pool_backward(w, dy.data(), cpu_dx.data());
    EMU_EXPECT(close(dx, cpu_dx, kElementwise, "dx"), std::string("avg_pool_backward ") + c.name);
    EMU_EXPECT_CLEAN(std::string(c.name));
  }
}
