// The per-channel kernels (CudaChannelKernels.cu) on the emulated GPU
// against the CPU backend: the reductions (batch norm's sums, the bias
// gradient) and batch norm's element-wise passes, on odd shapes (no rows,
// one row, fewer rows than a warp's lanes, thousands; channel counts
// below, at and above a warp, not a power of two). Each reduction runs on
// one scratch area the way CudaBackend.cpp hands it over (tickets zeroed
// once, partials left as the last launch wrote them) and must leave the
// tickets at zero.
#include "TestChannelKernels.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "Comparison.h"
#include "backend/Backend.h"
#include "backend/cuda/CudaKernels.h"

using namespace strata;
using namespace emutest;

namespace {

const int64_t kRows[] = {0, 1, 7, 4099};
const int64_t kChannels[] = {3, 16, 32, 64, 100};

// Every pair of kRows x kChannels, then shapes drawn at random (once;
// STRATA_TEST_SEED chooses them): up to 3,000 rows, and channel counts the
// fixed ones leave out: one (a tile of one lane), a dense layer's 10, 128
// and 256, just past a warp and past a power of two.
const std::vector<std::pair<int64_t, int64_t>>& shapes() {
  static const std::vector<std::pair<int64_t, int64_t>> all = [] {
    std::vector<std::pair<int64_t, int64_t>> v;
    for (int64_t rows : kRows)
      for (int64_t channels : kChannels) v.emplace_back(rows, channels);
    const int64_t more[] = {1, 2, 5, 10, 31, 33, 128, 256, 257};
    for (int i = 0; i < 10; ++i) {
      const int64_t channels = more[below(std::size(more))];
      v.emplace_back(below(3000), channels);
    }
    return v;
  }();
  return all;
}

// A reduction's scratch as CudaBackend::reduce_scratch gives it: new tickets
// zeroed, partials whatever is there (NaN here: a chunk's partial read
// before it is written shows).
struct Scratch {
  std::vector<double> partials;
  std::vector<unsigned> tickets;
  cuda_emu::ReduceScratch get(int64_t rows, int64_t channels) {
    const cuda_emu::ReduceScratchSize size = cuda_emu::channel_reduce_scratch_size(rows, channels);
    partials.assign(size.partial_bytes / sizeof(double) + 1, std::numeric_limits<double>::quiet_NaN());
    tickets.assign(size.ticket_bytes / sizeof(unsigned) + 1, 0u);
    return {partials.data(), tickets.data()};
  }
  std::string tickets_left() const {
    for (size_t i = 0; i < tickets.size(); ++i)
      if (tickets[i] != 0) return "ticket " + std::to_string(i) + " left at " + std::to_string(tickets[i]);
    return {};
  }
};

// Batch norm's inputs: means below the data so xhat > 0 and the long sums
// of dy * xhat do not cancel (Tolerances.h), x reaching below the mean so
// the relu cuts about a third. Every seventh x is the mean and every
// eleventh the x where v = x * scale + shift is 0 (in real numbers): v
// lands within a rounding of 0 there, where a differently rounded v flips
// the relu's mask; dy is large there, so a flipped mask moves the sums far
// outside their tolerance.
struct BatchNormInputs {
  int64_t rows, channels;
  std::vector<float> x, dy, mean, inv_std, gamma, beta;
  BatchNormInputs(int64_t r, int64_t c, bool with_gamma, bool with_beta)
      : rows(r),
        channels(c),
        x(uniform(r * c, -2.0f, 1.0f)),
        dy(uniform(r * c, -0.5f, 1.0f)),
        mean(uniform(c, -1.0f, -0.5f)),
        inv_std(uniform(c, 0.5f, 2.0f)),
        gamma(with_gamma ? uniform(c, 0.5f, 1.5f) : std::vector<float>{}),
        beta(with_beta ? uniform(c, -1.0f, 1.0f) : std::vector<float>{}) {
    for (int64_t i = 0; i < r * c; ++i) {
      const auto ch = static_cast<size_t>(i % c);
      const float scale = inv_std[ch] * (gamma.empty() ? 1.0f : gamma[ch]);
      if (i % 7 == 3) x[static_cast<size_t>(i)] = mean[ch];
      else if (i % 11 == 5) x[static_cast<size_t>(i)] = mean[ch] - (beta.empty() ? 0.0f : beta[ch]) / scale;
      else continue;
      dy[static_cast<size_t>(i)] = 64.0f;
    }
  }
  const float* g() const { return gamma.empty() ? nullptr : gamma.data(); }
  const float* b() const { return beta.empty() ? nullptr : beta.data(); }
  std::string name() const {
    return shape(rows, channels) + (gamma.empty() ? " gamma=null" : " gamma") + (beta.empty() ? " beta=null" : " beta");
  }
};

}  // namespace

void TestChannelKernels::channel_sums() {
  for (auto [rows, channels] : shapes()) {
    const std::string what = "channel_sums " + shape(rows, channels);
    const auto x = uniform(rows * channels, -0.5f, 1.0f);
    auto sum = poisoned(channels), sumsq = poisoned(channels), cpu_sum = sum, cpu_sumsq = sumsq;
    Scratch scratch;
    cuda_emu::channel_sums(kStream, x.data(), rows, channels, sum.data(), sumsq.data(), scratch.get(rows, channels));
    cpu_backend().channel_sums(x.data(), rows, channels, cpu_sum.data(), cpu_sumsq.data());
    EMU_EXPECT(close(sum, cpu_sum, summed(rows), "sum"), what);
    EMU_EXPECT(close(sumsq, cpu_sumsq, summed(rows), "sumsq"), what);
    EMU_EXPECT(scratch.tickets_left(), what);
    EMU_EXPECT_CLEAN(what);
  }
}

void TestChannelKernels::sum_rows_and_bias_gradient() {
  for (auto [rows, channels] : shapes()) {
    Scratch scratch;
    const cuda_emu::ReduceScratch s = scratch.get(rows, channels);
    const auto x = uniform(rows * channels, -0.5f, 1.0f);
    for (bool accumulate : {false, true}) {
      const std::string what = "sum_rows " + shape(rows, channels) + (accumulate ? " accumulate" : "");
      auto out = accumulate ? uniform(channels, -1.0f, 1.0f) : poisoned(channels), cpu_out = out;
      cuda_emu::sum_rows(kStream, x.data(), rows, channels, out.data(), accumulate, s);
      cpu_backend().sum_rows(x.data(), rows, channels, cpu_out.data(), accumulate);
      EMU_EXPECT(close(out, cpu_out, summed(rows), "out"), what);
      EMU_EXPECT(scratch.tickets_left(), what);
      EMU_EXPECT_CLEAN(what);
    }
    for (Activation act : {Activation::None, Activation::Relu, Activation::Tanh, Activation::Sigmoid}) {
      const std::string what = "bias_activation_backward " + shape(rows, channels) + " act " +
                               std::to_string(static_cast<int>(act));
      // y as the activation leaves it (relu: a third exactly 0).
      auto y = uniform(rows * channels, -0.5f, 1.0f);
      cpu_backend().activation_forward(act, y.data(), y.data(), rows, channels);
      const auto dy = uniform(rows * channels, -0.5f, 1.0f);
      auto dx = poisoned(rows * channels), dbias = poisoned(channels), cpu_dx = dx, cpu_dbias = dbias;
      cuda_emu::bias_activation_backward(kStream, act, y.data(), dy.data(), dx.data(), dbias.data(), rows, channels, s);
      cpu_backend().bias_activation_backward(act, y.data(), dy.data(), cpu_dx.data(), cpu_dbias.data(), rows, channels);
      EMU_EXPECT(close(dx, cpu_dx, kElementwise, "dx"), what);
      EMU_EXPECT(close(dbias, cpu_dbias, summed(rows), "dbias"), what);
      EMU_EXPECT(scratch.tickets_left(), what);
      EMU_EXPECT_CLEAN(what);
    }
  }
}

void TestChannelKernels::batch_norm_backward_reductions() {
  for (auto [rows, channels] : shapes()) {
    Scratch scratch;
    const cuda_emu::ReduceScratch s = scratch.get(rows, channels);
    {
      const std::string what = "batch_norm_backward_reduce " + shape(rows, channels);
      const auto dy = uniform(rows * channels, -0.5f, 1.0f), x = uniform(rows * channels, -0.5f, 1.0f);
      const auto mean = uniform(channels, -1.0f, -0.5f), inv_std = uniform(channels, 0.5f, 2.0f);
      auto a = poisoned(channels), b = poisoned(channels), cpu_a = a, cpu_b = b;
      cuda_emu::batch_norm_backward_reduce(kStream, dy.data(), x.data(), rows, channels, mean.data(), inv_std.data(),
                                           a.data(), b.data(), s);
      cpu_backend().batch_norm_backward_reduce(dy.data(), x.data(), rows, channels, mean.data(), inv_std.data(), cpu_a.data(),
                                               cpu_b.data());
      EMU_EXPECT(close(a, cpu_a, summed(rows), "sum_dy"), what);
      EMU_EXPECT(close(b, cpu_b, summed(rows), "sum_dy_xhat"), what);
      EMU_EXPECT(scratch.tickets_left(), what);
      EMU_EXPECT_CLEAN(what);
    }
    for (auto [with_gamma, with_beta] : {std::pair{true, true}, {false, true}, {true, false}, {false, false}}) {
      const BatchNormInputs in(rows, channels, with_gamma, with_beta);
      const std::string what = "batch_norm_relu_backward_reduce " + in.name();
      auto a = poisoned(channels), b = poisoned(channels), cpu_a = a, cpu_b = b;
      cuda_emu::batch_norm_relu_backward_reduce(kStream, in.dy.data(), in.x.data(), rows, channels, in.mean.data(),
                                                in.inv_std.data(), in.g(), in.b(), a.data(), b.data(), s);
      cpu_backend().batch_norm_relu_backward_reduce(in.dy.data(), in.x.data(), rows, channels, in.mean.data(),
                                                    in.inv_std.data(), in.g(), in.b(), cpu_a.data(), cpu_b.data());
      EMU_EXPECT(close(a, cpu_a, summed(rows), "sum_dz"), what);
      EMU_EXPECT(close(b, cpu_b, summed(rows), "sum_dz_xhat"), what);
      EMU_EXPECT(scratch.tickets_left(), what);
      EMU_EXPECT_CLEAN(what);
    }
  }
}

void TestChannelKernels::batch_norm_apply() {
  for (auto [rows, channels] : shapes())
    for (auto [with_gamma, with_beta] : {std::pair{true, true}, {false, true}, {true, false}, {false, false}})
      for (bool relu : {false, true}) {
        const BatchNormInputs in(rows, channels, with_gamma, with_beta);
        const std::string what = std::string(relu ? "batch_norm_apply_relu " : "batch_norm_apply ") + in.name();
        auto y = poisoned(rows * channels), cpu_y = y;
        cuda_emu::batch_norm_apply(kStream, in.x.data(), rows, channels, in.mean.data(), in.inv_std.data(), in.g(), in.b(),
                                   y.data(), relu);
        if (relu)
          cpu_backend().batch_norm_apply_relu(in.x.data(), rows, channels, in.mean.data(), in.inv_std.data(), in.g(), in.b(),
                                              cpu_y.data());
        else
          cpu_backend().batch_norm_apply(in.x.data(), rows, channels, in.mean.data(), in.inv_std.data(), in.g(), in.b(),
                                         cpu_y.data());
        EMU_EXPECT(close(y, cpu_y, kElementwise, "y"), what);
        EMU_EXPECT(same_mask(
                       y, cpu_y, [](float v) { return v > 0.0f; }, "y > 0"),
                   what);
        EMU_EXPECT_CLEAN(what);
      }
}

void TestChannelKernels::batch_norm_backward_apply() {
  for (auto [rows, channels] : shapes())
    for (auto [with_gamma, with_beta] : {std::pair{true, true}, {false, true}, {true, false}})
      for (bool relu : {false, true})
        // Sums of a batch's size (dx of order 1), and zero sums: dx is
        // then scale * dz, nonzero exactly where the relu's mask passes dy.
        for (bool zero_sums : {false, true}) {
          const BatchNormInputs in(rows, channels, with_gamma, with_beta);
          const std::string what = std::string(relu ? "batch_norm_relu_backward_apply " : "batch_norm_backward_apply ") +
                                   in.name() + (zero_sums ? " sums=0" : "");
          const float half = static_cast<float>(rows) * 0.5f;
          const auto sum = zero_sums ? std::vector<float>(static_cast<size_t>(channels)) : uniform(channels, -half, half);
          const auto sum_xhat = zero_sums ? sum : uniform(channels, -half, half);
          const std::vector<float> count{static_cast<float>(std::max<int64_t>(rows, 1))};
          auto dx = poisoned(rows * channels), cpu_dx = dx;
          // The backend hands beta to the kernel for the relu's pass only.
          cuda_emu::batch_norm_backward_apply(kStream, in.dy.data(), in.x.data(), rows, channels, in.mean.data(),
                                              in.inv_std.data(), in.g(), relu ? in.b() : nullptr, sum.data(), sum_xhat.data(),
                                              count.data(), dx.data(), relu);
          if (relu)
            cpu_backend().batch_norm_relu_backward_apply(in.dy.data(), in.x.data(), rows, channels, in.mean.data(),
                                                         in.inv_std.data(), in.g(), in.b(), sum.data(), sum_xhat.data(),
                                                         count.data(), cpu_dx.data());
          else
            cpu_backend().batch_norm_backward_apply(in.dy.data(), in.x.data(), rows, channels, in.mean.data(),
                                                    in.inv_std.data(), in.g(), sum.data(), sum_xhat.data(), count.data(),
                                                    cpu_dx.data());
          EMU_EXPECT(close(dx, cpu_dx, kElementwise, "dx"), what);
          if (zero_sums)
            EMU_EXPECT(same_mask(
                           dx, cpu_dx, [](float v) { return v != 0.0f; }, "dx != 0"),
                       what);
          EMU_EXPECT_CLEAN(what);
        }
}

void TestChannelKernels::batch_norm_statistics() {
  constexpr float eps = 1e-3f;
  for (int64_t channels : kChannels) {
    // Sums of `count` rows with means in [-1, 1) and variances in [0.1, 2),
    // as the GPU check makes them; count 0: mean 0, inv_std 1 / sqrt(eps).
    for (float count : {1000.0f, 0.0f}) {
      const std::string what = "batch_norm_stats channels " + std::to_string(channels) + " count " + std::to_string(count);
      const auto m = uniform(channels, -1.0f, 1.0f), v = uniform(channels, 0.1f, 2.0f);
      std::vector<float> sums(static_cast<size_t>(2 * channels + 1));
      for (int64_t k = 0; k < channels; ++k) {
        const auto i = static_cast<size_t>(k);
        sums[i] = m[i] * count;
        sums[static_cast<size_t>(channels) + i] = (v[i] + m[i] * m[i]) * count;
      }
      sums.back() = count;
      auto mean = poisoned(channels), inv_std = poisoned(channels), cpu_mean = mean, cpu_inv_std = inv_std;
      cuda_emu::batch_norm_stats(kStream, sums.data(), channels, eps, mean.data(), inv_std.data());
      cpu_backend().batch_norm_stats(sums.data(), channels, eps, cpu_mean.data(), cpu_inv_std.data());
      EMU_EXPECT(close(mean, cpu_mean, kElementwise, "mean"), what);
      EMU_EXPECT(close(inv_std, cpu_inv_std, kElementwise, "inv_std"), what);
      EMU_EXPECT_CLEAN(what);
    }
    {
      const std::string what = "batch_norm_inference_stats channels " + std::to_string(channels);
      const auto moving_mean = uniform(channels, -1.0f, 1.0f), moving_var = uniform(channels, 0.1f, 2.0f);
      auto mean = poisoned(channels), inv_std = poisoned(channels), cpu_mean = mean, cpu_inv_std = inv_std;
      cuda_emu::batch_norm_inference_stats(kStream, moving_mean.data(), moving_var.data(), channels, eps, mean.data(),
                                           inv_std.data());
      cpu_backend().batch_norm_inference_stats(moving_mean.data(), moving_var.data(), channels, eps, cpu_mean.data(),
                                               cpu_inv_std.data());
      EMU_EXPECT(close(mean, cpu_mean, kExact, "mean"), what);
      EMU_EXPECT(close(inv_std, cpu_inv_std, kElementwise, "inv_std"), what);
      EMU_EXPECT_CLEAN(what);
    }
    for (float count : {128.0f, 0.0f}) {
      const std::string what = "batch_norm_moving_update channels " + std::to_string(channels) + " count " +
                               std::to_string(count);
      const auto mean = uniform(channels, -1.0f, 1.0f), inv_std = uniform(channels, 0.5f, 2.0f);
      const std::vector<float> n{count};
      auto moving_mean = uniform(channels, -1.0f, 1.0f), moving_var = uniform(channels, 0.1f, 2.0f);
      auto cpu_moving_mean = moving_mean, cpu_moving_var = moving_var;
      cuda_emu::batch_norm_moving_update(kStream, mean.data(), inv_std.data(), n.data(), channels, eps, 0.99f,
                                         moving_mean.data(), moving_var.data());
      cpu_backend().batch_norm_moving_update(mean.data(), inv_std.data(), n.data(), channels, eps, 0.99f,
                                             cpu_moving_mean.data(), cpu_moving_var.data());
      EMU_EXPECT(close(moving_mean, cpu_moving_mean, kElementwise, "moving_mean"), what);
      EMU_EXPECT(close(moving_var, cpu_moving_var, kElementwise, "moving_var"), what);
      EMU_EXPECT_CLEAN(what);
    }
  }
}
