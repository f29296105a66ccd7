// The element-wise, per-row and scalar kernels of CudaKernels.cu on the
// emulated GPU against the CPU backend (transpose and fill32, which it
// lacks, against their definitions), on the GPU check's tolerances.
#include "TestDenseKernels.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "Comparison.h"
#include "backend/Backend.h"
#include "backend/cuda/CudaKernels.h"

using namespace strata;
using namespace emutest;

void TestDenseKernels::elementwise() {
  // Sizes below one block, a block and one, and many blocks (the small
  // grids' two blocks of 64 threads: the grid-stride loops turn).
  for (int64_t n : {1, 257, 5000}) {
    const std::string size = " n " + std::to_string(n);
    const auto x = uniform(n, -1.0f, 1.0f), other = uniform(n, -1.0f, 1.0f);
    for (float beta : {0.0f, 0.5f}) {
      auto y = beta == 0.0f ? poisoned(n) : other, cpu_y = y;
      cuda_emu::axpby(kStream, n, 1.5f, x.data(), beta, y.data());
      cpu_backend().axpby(n, 1.5f, x.data(), beta, cpu_y.data());
      EMU_EXPECT(close(y, cpu_y, kElementwise, "y"), "axpby beta " + std::to_string(beta) + size);
    }
    {
      auto y = poisoned(n), cpu_y = y;
      cuda_emu::mul(kStream, n, x.data(), other.data(), y.data());
      cpu_backend().mul(n, x.data(), other.data(), cpu_y.data());
      EMU_EXPECT(close(y, cpu_y, kExact, "y"), "mul" + size);
    }
    {
      // A call number above 2^16 and a counter offset: the whole key is used.
      const std::vector<int32_t> call{70001};
      auto y = poisoned(n), mask = poisoned(n), cpu_y = y, cpu_mask = mask;
      cuda_emu::dropout(kStream, n, 0.3f, 42, 5, call.data(), 1000, x.data(), y.data(), mask.data());
      cpu_backend().dropout(n, 0.3f, 42, 5, call.data(), 1000, x.data(), cpu_y.data(), cpu_mask.data());
      EMU_EXPECT(close(mask, cpu_mask, kExact, "mask"), "dropout" + size);
      EMU_EXPECT(close(y, cpu_y, kElementwise, "y"), "dropout" + size);
    }
    {
      // Inside and outside the clamp, both ends.
      auto p = uniform(n, -0.1f, 1.1f);
      p[0] = 1e-7f;
      const auto dy = uniform(n, -1.0f, 1.0f);
      auto y = poisoned(n), dx = poisoned(n), cpu_y = y, cpu_dx = dx;
      cuda_emu::log_clamp(kStream, n, p.data(), 1e-6f, y.data());
      cuda_emu::log_clamp_backward(kStream, n, p.data(), 1e-6f, dy.data(), dx.data());
      cpu_backend().log_clamp(n, p.data(), 1e-6f, cpu_y.data());
      cpu_backend().log_clamp_backward(n, p.data(), 1e-6f, dy.data(), cpu_dx.data());
      EMU_EXPECT(close(y, cpu_y, kElementwise, "y"), "log_clamp" + size);
      EMU_EXPECT(close(dx, cpu_dx, kElementwise, "dx"), "log_clamp_backward" + size);
    }
    {
      auto v = uniform(n, -1.0f, 1.0f), cpu_v = v;
      cuda_emu::add_scalar(kStream, n, 0.75f, v.data());
      cpu_backend().add_scalar(n, 0.75f, cpu_v.data());
      EMU_EXPECT(close(v, cpu_v, kExact, "x"), "add_scalar" + size);
      std::vector<int32_t> counters(static_cast<size_t>(n), -1), cpu_counters = counters;
      counters[0] = cpu_counters[0] = 0x7fffffff;  // wraps as unsigned
      cuda_emu::increment(kStream, n, counters.data());
      cpu_backend().increment(n, cpu_counters.data());
      EMU_EXPECT(close(counters, cpu_counters, kExact, "x"), "increment" + size);
    }
    EMU_EXPECT_CLEAN("elementwise" + size);
  }
}

void TestDenseKernels::activations() {
  for (int64_t rows : {1, 7, 300})
    for (int64_t cols : {1, 10, 100})
      for (Activation act :
           {Activation::None, Activation::Relu, Activation::Tanh, Activation::Sigmoid, Activation::Softmax}) {
        const std::string what = "activation " + std::to_string(static_cast<int>(act)) + " " + shape(rows, cols);
        const int64_t n = rows * cols;
        const auto x = uniform(n, -3.0f, 3.0f), dy = uniform(n, -1.0f, 1.0f), bias = uniform(cols, -1.0f, 1.0f);
        auto y = poisoned(n), cpu_y = y;
        cuda_emu::activation_forward(kStream, act, x.data(), y.data(), rows, cols);
        cpu_backend().activation_forward(act, x.data(), cpu_y.data(), rows, cols);
        EMU_EXPECT(close(y, cpu_y, kElementwise, "y"), what + " forward");
        auto dx = poisoned(n), cpu_dx = dx;
        cuda_emu::activation_backward(kStream, act, cpu_y.data(), dy.data(), dx.data(), rows, cols);
        cpu_backend().activation_backward(act, cpu_y.data(), dy.data(), cpu_dx.data(), rows, cols);
        EMU_EXPECT(close(dx, cpu_dx, kElementwise, "dx"), what + " backward");
        if (act != Activation::Softmax) {
          auto z = x, cpu_z = x;
          cuda_emu::bias_activation(kStream, act, z.data(), bias.data(), rows, cols);
          cpu_backend().bias_activation(act, cpu_z.data(), bias.data(), rows, cols);
          EMU_EXPECT(close(z, cpu_z, kElementwise, "y"), what + " bias_activation");
          auto b = x, cpu_b = x;
          cuda_emu::add_bias_rows(kStream, b.data(), bias.data(), rows, cols);
          cpu_backend().add_bias_rows(cpu_b.data(), bias.data(), rows, cols);
          EMU_EXPECT(close(b, cpu_b, kExact, "y"), what + " add_bias_rows");
        }
        EMU_EXPECT_CLEAN(what);
      }
}

void TestDenseKernels::per_row_losses() {
  // More rows than the small grids' two blocks of eight warps; a row longer than a warp.
  for (int64_t rows : {1, 37})
    for (int64_t cols : {1, 10, 100}) {
      const std::string what = "losses " + shape(rows, cols);
      const auto logits = uniform(rows * cols, -3.0f, 3.0f);
      auto labels = labels_in(rows, cols);
      labels[0] = static_cast<int32_t>(cols);  // out of range: loss 0, no gradient
      auto loss = poisoned(rows), dlogits = poisoned(rows * cols), cpu_loss = loss, cpu_dlogits = dlogits;
      cuda_emu::sparse_softmax_xent(kStream, logits.data(), labels.data(), rows, cols, loss.data(), dlogits.data());
      cpu_backend().sparse_softmax_xent(logits.data(), labels.data(), rows, cols, cpu_loss.data(), cpu_dlogits.data());
      EMU_EXPECT(close(loss, cpu_loss, summed(cols), "loss"), what + " sparse_softmax_xent");
      EMU_EXPECT(close(dlogits, cpu_dlogits, kElementwise, "dlogits"), what + " sparse_softmax_xent");
      auto targets = uniform(rows * cols, 0.0f, 1.0f);
      loss = poisoned(rows), dlogits = poisoned(rows * cols), cpu_loss = loss, cpu_dlogits = dlogits;
      cuda_emu::softmax_xent(kStream, logits.data(), targets.data(), rows, cols, loss.data(), dlogits.data());
      cpu_backend().softmax_xent(logits.data(), targets.data(), rows, cols, cpu_loss.data(), cpu_dlogits.data());
      EMU_EXPECT(close(loss, cpu_loss, summed(cols), "loss"), what + " softmax_xent");
      EMU_EXPECT(close(dlogits, cpu_dlogits, kElementwise, "dlogits"), what + " softmax_xent");
      EMU_EXPECT_CLEAN(what);
    }
}

void TestDenseKernels::scalars_and_rows() {
  for (int64_t n : {1, 1000, 3001}) {
    const std::string size = " n " + std::to_string(n);
    const auto x = uniform(n, -0.5f, 1.0f);
    const std::vector<float> scale{1.0f / static_cast<float>(n)};
    auto out = poisoned(1), cpu_out = out;
    cuda_emu::scaled_sum(kStream, n, x.data(), scale.data(), out.data());
    cpu_backend().scaled_sum(n, x.data(), scale.data(), cpu_out.data());
    EMU_EXPECT(close(out, cpu_out, summed(n), "out"), "scaled_sum" + size);
    const std::vector<float> g{0.5f};
    auto y = poisoned(n), cpu_y = y;
    cuda_emu::broadcast_scaled(kStream, n, g.data(), scale.data(), y.data());
    cpu_backend().broadcast_scaled(n, g.data(), scale.data(), cpu_y.data());
    EMU_EXPECT(close(y, cpu_y, kExact, "y"), "broadcast_scaled" + size);
    EMU_EXPECT_CLEAN("scalars" + size);
  }
  for (int64_t rows : {1, 37, 1000})
    for (int64_t cols : {1, 10}) {
      const std::string what = shape(rows, cols);
      const auto x = quantized(rows * cols), scale = uniform(rows, -1.0f, 1.0f);
      std::vector<int32_t> argmax(static_cast<size_t>(rows), -9), cpu_argmax = argmax;
      cuda_emu::argmax_rows(kStream, x.data(), rows, cols, argmax.data());
      cpu_backend().argmax_rows(x.data(), rows, cols, cpu_argmax.data());
      EMU_EXPECT(close(argmax, cpu_argmax, kExact, "argmax"), "argmax_rows " + what);
      auto y = poisoned(rows * cols), cpu_y = y;
      cuda_emu::scale_rows(kStream, x.data(), scale.data(), rows, cols, y.data());
      cpu_backend().scale_rows(x.data(), scale.data(), rows, cols, cpu_y.data());
      EMU_EXPECT(close(y, cpu_y, kExact, "y"), "scale_rows " + what);
      // pixels_to_float and gather_rows over the same shape, as bytes.
      std::vector<uint8_t> pixels(static_cast<size_t>(rows * cols));
      for (auto& p : pixels) p = static_cast<uint8_t>(below(256));
      const auto mean = uniform(cols, 0.2f, 0.5f), inv_std = uniform(cols, 2.0f, 4.0f);
      for (bool normalise : {false, true}) {
        auto f = poisoned(rows * cols), cpu_f = f;
        cuda_emu::pixels_to_float(kStream, rows, cols, pixels.data(), 1.0f / 255.0f, normalise ? mean.data() : nullptr,
                                  normalise ? inv_std.data() : nullptr, f.data());
        cpu_backend().pixels_to_float(rows, cols, pixels.data(), 1.0f / 255.0f, normalise ? mean.data() : nullptr,
                                      normalise ? inv_std.data() : nullptr, cpu_f.data());
        EMU_EXPECT(close(f, cpu_f, kElementwise, "out"), "pixels_to_float " + what);
      }
      const auto picks = labels_in(17, rows);
      std::vector<uint8_t> gathered(static_cast<size_t>(17 * cols), 0xee), cpu_gathered = gathered;
      cuda_emu::gather_rows(kStream, pixels.data(), cols, picks.data(), 17, gathered.data());
      cpu_backend().gather_rows(pixels.data(), cols, picks.data(), 17, cpu_gathered.data());
      EMU_EXPECT(close(gathered, cpu_gathered, kExact, "out"), "gather_rows " + what);
      EMU_EXPECT_CLEAN(what);
    }
}

void TestDenseKernels::optimizers() {
  for (int64_t n : {1, 300, 5000}) {
    const std::string size = " n " + std::to_string(n);
    const auto g = uniform(n, -1.0f, 1.0f);
    const std::vector<float> lr{0.01f};
    for (float momentum : {0.0f, 0.9f})
      for (bool nesterov : {false, true}) {
        auto w = uniform(n, -1.0f, 1.0f), velocity = uniform(n, -0.1f, 0.1f), cpu_w = w, cpu_velocity = velocity;
        cuda_emu::sgd_update(kStream, n, w.data(), g.data(), velocity.data(), lr.data(), momentum, nesterov);
        cpu_backend().sgd_update(n, cpu_w.data(), g.data(), cpu_velocity.data(), lr.data(), momentum, nesterov,
                                 WeightStores::Cached);
        const std::string what = "sgd_update momentum " + std::to_string(momentum) + (nesterov ? " nesterov" : "") + size;
        EMU_EXPECT(close(w, cpu_w, kElementwise, "w"), what);
        EMU_EXPECT(close(velocity, cpu_velocity, kElementwise, "velocity"), what);
      }
    auto w = uniform(n, -1.0f, 1.0f), m = uniform(n, -0.1f, 0.1f), v = uniform(n, 0.0f, 0.01f);
    auto cpu_w = w, cpu_m = m, cpu_v = v;
    const AdamParams params{0.9f, 0.999f, 1e-7f};
    const std::vector<float> lr_step{1e-3f, 2.0f};
    cuda_emu::adam_update(kStream, n, w.data(), g.data(), m.data(), v.data(), params, lr_step.data());
    cpu_backend().adam_update(n, cpu_w.data(), g.data(), cpu_m.data(), cpu_v.data(), params, lr_step.data(),
                              WeightStores::Cached);
    EMU_EXPECT(close(w, cpu_w, kElementwise, "w"), "adam_update" + size);
    EMU_EXPECT(close(m, cpu_m, kElementwise, "m"), "adam_update" + size);
    EMU_EXPECT(close(v, cpu_v, kElementwise, "v"), "adam_update" + size);
    EMU_EXPECT_CLEAN("optimizers" + size);
  }
}

// No CPU counterpart: against the definitions.
void TestDenseKernels::transpose_and_fill() {
  struct Case {
    int64_t rows, cols, batch;
  };
  // Tiles cut by the edges, more row tiles and matrices than the small
  // grids' two, and the copy of a one-row matrix.
  for (const Case& p : {Case{1, 1, 1}, Case{33, 65, 1}, Case{100, 7, 3}, Case{31, 32, 5}, Case{1, 50, 2}}) {
    const std::string what = "transpose " + shape(p.rows, p.cols) + " batch " + std::to_string(p.batch);
    const auto in = uniform(p.rows * p.cols * p.batch, -1.0f, 1.0f);
    auto out = poisoned(p.rows * p.cols * p.batch), want = out;
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t r = 0; r < p.rows; ++r)
        for (int64_t c = 0; c < p.cols; ++c)
          want[static_cast<size_t>((b * p.cols + c) * p.rows + r)] = in[static_cast<size_t>((b * p.rows + r) * p.cols + c)];
    cuda_emu::transpose(kStream, in.data(), p.rows, p.cols, out.data(), p.batch);
    EMU_EXPECT(close(out, want, kExact, "out"), what);
    EMU_EXPECT_CLEAN(what);
  }
  for (int64_t n : {1, 1000}) {
    std::vector<uint32_t> words(static_cast<size_t>(n) + 1, 7u), want(words.size(), 0xdeadbeefu);
    want.back() = 7u;  // past the end: untouched
    cuda_emu::fill32(kStream, words.data(), n, 0xdeadbeefu);
    EMU_EXPECT(close(words, want, kExact, "words"), "fill32 n " + std::to_string(n));
  }
  EMU_EXPECT_CLEAN(std::string("fill32"));
}
