// The image (NHWC) and batch-normalisation ops of the comparison.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "BackendComparison.h"
#include "ShapeText.h"
#include "Tolerances.h"

namespace strata::gpu_check {

using tolerance::kElementwise;
using tolerance::kExact;
using tolerance::summed;

namespace {
// TF "same": out = ceil(in / stride), the odd padding pixel after.
Window2D same(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t s) {
  const int64_t oh = (h + s - 1) / s, ow = (w + s - 1) / s;
  const int64_t ph = std::max<int64_t>(0, (oh - 1) * s + k - h), pw = std::max<int64_t>(0, (ow - 1) * s + k - w);
  return {n, h, w, c, k, k, s, s, ph / 2, pw / 2, oh, ow};
}

Window2D valid(int64_t n, int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw, int64_t sh, int64_t sw) {
  return {n, h, w, c, kh, kw, sh, sw, 0, 0, (h - kh) / sh + 1, (w - kw) / sw + 1};
}

std::string describe(const Window2D& w) {
  return dims({w.batch, w.height, w.width, w.channels}) + " k" + dims({w.kernel_h, w.kernel_w}) + " s" +
         dims({w.stride_h, w.stride_w}) + " pad " + std::to_string(w.pad_top) + "," + std::to_string(w.pad_left) +
         " -> " + dims({w.out_h, w.out_w});
}

int64_t input_size(const Window2D& w) { return w.batch * w.height * w.width * w.channels; }
int64_t output_size(const Window2D& w) { return w.batch * w.out_h * w.out_w * w.channels; }
Shape input_shape(const Window2D& w) { return Shape{w.batch, w.height, w.width, w.channels}; }
Shape output_shape(const Window2D& w) { return Shape{w.batch, w.out_h, w.out_w, w.channels}; }
}  // namespace

// ---- convolution patches ---------------------------------------------------------

void BackendComparison::images() {
  // Strided with padding on odd sizes; a non-square valid window with
  // different strides; a 5x5 "same" convolution over 32 channels (a 2.5M
  // element patch matrix).
  for (const Window2D& w : {same(3, 13, 11, 3, 3, 2), valid(2, 9, 10, 5, 2, 3, 1, 2), same(4, 28, 28, 32, 5, 1)}) {
    const Shape col_shape{w.batch * w.out_h * w.out_w, w.kernel_h * w.kernel_w * w.channels};
    h_.check("im2col", describe(w), [&](OpCase& c) {
      auto& x = c.input(input_shape(w), -1.0f, 1.0f);
      auto& col = c.poisoned(col_shape);
      c.run([&](Backend& b, Side s) { b.im2col(w, x.f(s), col.f(s)); });
      c.expect("", col, kExact);  // a gather: copies and zeros
    });
    h_.check("col2im", describe(w), [&](OpCase& c) {
      auto& col = c.input(col_shape, -1.0f, 1.0f);
      auto& dx = c.poisoned(input_shape(w));
      c.run([&](Backend& b, Side s) { b.col2im(w, col.f(s), dx.f(s)); });
      // A pixel sums the patch elements over it: up to kernel_h * kernel_w terms.
      c.expect("", dx, summed(w.kernel_h * w.kernel_w));
    });
  }
}

// ---- convolution in one call (cuDNN on a GPU) -------------------------------------

void BackendComparison::convolution() {
  // The two layers of the TF-tutorial CNN at batch 64; a strided "same"
  // window with symmetric padding; one whose "same" padding is asymmetric
  // (stride 2 on an even size), which cuDNN cannot express: the backend must
  // still compute it (by im2col and a product).
  struct Conv {
    Window2D w;
    int64_t filters;
  };
  // Every way the device offers for the shape, each forced in turn (on a
  // GPU: cuDNN in NHWC and in NCHW, im2col over slices of the batch and over
  // all of it), so a way a race would only sometimes pick is checked too.
  Backend& device = h_.backend();
  for (const Conv& cv : {Conv{same(64, 28, 28, 1, 5, 1), 32}, Conv{same(64, 14, 14, 32, 5, 1), 64},
                         Conv{same(3, 13, 11, 3, 3, 2), 16}, Conv{same(2, 8, 8, 3, 3, 2), 8}}) {
    const Window2D& w = cv.w;
    const int64_t f = cv.filters, patch = w.kernel_h * w.kernel_w * w.channels, rows = w.batch * w.out_h * w.out_w;
    using Direction = Backend::ConvolutionDirection;
    // A way may take some directions of a shape and not others (cuDNN with
    // no qualifying algorithm for one): each direction's check forces the
    // way only where the direction offers it.
    const std::vector<std::string> offered[3] = {device.convolution_ways(w, f, Direction::Forward),
                                                 device.convolution_ways(w, f, Direction::BackwardData),
                                                 device.convolution_ways(w, f, Direction::BackwardFilter)};
    const auto offers = [&](const std::string& way, Direction d) {
      const std::vector<std::string>& list = offered[static_cast<size_t>(d)];
      return std::find(list.begin(), list.end(), way) != list.end();
    };
    std::vector<std::string> ways;  // every way some direction offers, in the device's order
    for (const std::vector<std::string>& list : offered)
      for (const std::string& way : list)
        if (std::find(ways.begin(), ways.end(), way) == ways.end()) ways.push_back(way);
    for (const std::string& way : ways) {
      device.force_convolution_way(way);
      const std::string shape = describe(w) + " filters " + std::to_string(f) + " via " + way;
      const bool forward = offers(way, Direction::Forward), data = offers(way, Direction::BackwardData),
                 filter = offers(way, Direction::BackwardFilter);
      std::string unoffered;
      for (const auto& [is_offered, name] :
           {std::pair{forward, "forward"}, {data, "gradient of the input"}, {filter, "gradient of the kernel"}})
        if (!is_offered) unoffered += (unoffered.empty() ? "" : ", ") + std::string(name);
      if (!unoffered.empty())
        std::printf("%s: not offered for the %s (checked through the other ways)\n", shape.c_str(), unoffered.c_str());
      // The case's calls on both sides, and whether the forced way ran them:
      // one that refuses a call hands it to im2col, whose output passes too,
      // so without this the way would pass unchecked.
      const auto run_forced = [&](OpCase& c, const OpCase::Kernel& kernel) {
        const int64_t before = device.forced_convolution_refusals();
        c.run(kernel);
        c.expect_words("calls the forced way refused", {static_cast<uint32_t>(device.forced_convolution_refusals() - before)},
                       {0u});
      };
      // Inputs with a nonzero mean, so the long sums do not cancel (Tolerances.h).
      if (forward)
        h_.check("conv2d", shape, [&](OpCase& c) {
          auto& x = c.input(input_shape(w), -0.5f, 1.0f);
          auto& k = c.input(Shape{patch, f}, -0.5f, 1.0f);
          auto& y = c.poisoned(Shape{rows, f});
          run_forced(c, [&](Backend& b, Side s) { b.conv2d(w, f, x.f(s), k.f(s), y.f(s)); });
          c.expect("", y, summed(patch));
        });
      if (data)
        h_.check("conv2d_backward_data", shape, [&](OpCase& c) {
          auto& dy = c.input(Shape{rows, f}, -0.5f, 1.0f);
          auto& k = c.input(Shape{patch, f}, -0.5f, 1.0f);
          auto& dx = c.poisoned(input_shape(w));
          run_forced(c, [&](Backend& b, Side s) { b.conv2d_backward_data(w, f, dy.f(s), k.f(s), dx.f(s)); });
          c.expect("", dx, summed(w.kernel_h * w.kernel_w * f));
        });
      if (filter)
        h_.check("conv2d_backward_filter", shape, [&](OpCase& c) {
          auto& x = c.input(input_shape(w), -0.5f, 1.0f);
          auto& dy = c.input(Shape{rows, f}, -0.5f, 1.0f);
          auto& dk = c.poisoned(Shape{patch, f});
          run_forced(c, [&](Backend& b, Side s) { b.conv2d_backward_filter(w, f, x.f(s), dy.f(s), dk.f(s)); });
          c.expect("", dk, summed(rows));
        });
      // The forward pass handing its patch matrix to the kernel gradient
      // (nn::conv2d): kept where the way is im2col over the whole batch, and
      // the gradient from it as conv2d_backward_filter's (the CPU's).
      if (forward && filter)
        h_.check("conv2d_keeping_patches", shape, [&](OpCase& c) {
          auto& x = c.input(input_shape(w), -0.5f, 1.0f);
          auto& k = c.input(Shape{patch, f}, -0.5f, 1.0f);
          auto& dy = c.input(Shape{rows, f}, -0.5f, 1.0f);
          auto& y = c.poisoned(Shape{rows, f});
          auto& dk = c.poisoned(Shape{patch, f});
          uint32_t kept_on_device = 2;
          run_forced(c, [&](Backend& b, Side s) {
            if (s == Side::Cpu) {
              b.conv2d(w, f, x.f(s), k.f(s), y.f(s));
              return b.conv2d_backward_filter(w, f, x.f(s), dy.f(s), dk.f(s));
            }
            const Tensor patches = b.conv2d_keeping_patches(w, f, x.f(s), k.f(s), y.f(s));
            kept_on_device = patches.defined() ? 1 : 0;
            if (patches.defined()) b.gemm(true, false, patch, f, rows, 1.0f, patches.ptr(), dy.f(s), 0.0f, dk.f(s));
            else b.conv2d_backward_filter(w, f, x.f(s), dy.f(s), dk.f(s));
          });
          c.expect("y", y, summed(patch));
          c.expect("dkernel", dk, summed(rows));
          c.expect_words("patches kept (1) or not (0)", {kept_on_device}, {way == "im2col" ? 1u : 0u});
        });
    }
    device.force_convolution_way("");
  }
}

// ---- pooling ------------------------------------------------------------------

void BackendComparison::pooling() {
  struct Pool {
    Window2D w;
    const char* values;  // "random"; "ties": from {0..3}; "negative": in [-2, -1), so a padded 0 would win
  };
  for (const Pool& p : {Pool{same(3, 13, 11, 5, 3, 2), "random"}, Pool{valid(16, 28, 28, 96, 2, 2, 2, 2), "random"},
                        Pool{same(2, 7, 9, 4, 3, 1), "ties"}, Pool{same(3, 13, 11, 5, 3, 2), "negative"},
                        Pool{valid(4, 8, 6, 8, 2, 2, 2, 2), "ties"}}) {
    const Window2D& w = p.w;
    const std::string kind = p.values;
    const std::string shape = describe(w) + " " + kind;
    auto make_input = [&](OpCase& c) {
      std::vector<float> v = kind == "negative" ? c.uniform(input_size(w), -2.0f, -1.0f) : c.uniform(input_size(w), 0.0f, 4.0f);
      if (kind == "ties")
        for (auto& x : v) x = std::floor(x);
      return v;
    };
    h_.check("max_pool", shape, [&](OpCase& c) {
      auto& x = c.values(input_shape(w), make_input(c));
      auto& y = c.poisoned(output_shape(w));
      auto& argmax = c.poisoned(output_shape(w), DType::Int32);
      c.run([&](Backend& b, Side s) { b.max_pool(w, x.f(s), nullptr, Activation::None, y.f(s), argmax.i(s)); });
      c.expect("y", y, kExact);
      c.expect("argmax", argmax, kExact);  // with ties: the first maximum in window order
    });
    // A convolution's bias and relu applied by the pooling (nn::max_pool_op):
    // each pixel plus its channel's bias compared, relu on the maximum.
    h_.check("max_pool_bias_relu", shape, [&](OpCase& c) {
      auto& x = c.values(input_shape(w), make_input(c));
      auto& bias = c.input(Shape{w.channels}, -3.0f, 1.0f);
      auto& y = c.poisoned(output_shape(w));
      auto& argmax = c.poisoned(output_shape(w), DType::Int32);
      c.run([&](Backend& b, Side s) { b.max_pool(w, x.f(s), bias.f(s), Activation::Relu, y.f(s), argmax.i(s)); });
      c.expect("y", y, kExact);
      c.expect("argmax", argmax, kExact);
    });
    h_.check("max_pool_backward", shape, [&](OpCase& c) {
      // The CPU's argmax feeds both sides: this checks the scatter alone.
      Tensor x = Tensor::from(input_shape(w), make_input(c));
      Tensor y = Tensor::empty(output_shape(w)), where = Tensor::empty(output_shape(w), DType::Int32);
      cpu_backend().max_pool(w, x.ptr(), nullptr, Activation::None, y.ptr(), where.int_ptr());
      auto& argmax = c.ints(output_shape(w), std::vector<int32_t>(where.ints(), where.ints() + output_size(w)));
      auto& dy = c.input(output_shape(w), -1.0f, 1.0f);
      auto& dx = c.poisoned(input_shape(w));
      c.run([&](Backend& b, Side s) { b.max_pool_backward(w, dy.f(s), argmax.i(s), dx.f(s)); });
      c.expect("", dx, kElementwise);  // overlapping windows add a few gradients into one pixel
    });
    if (kind == "negative") continue;
    h_.check("avg_pool", shape, [&](OpCase& c) {
      auto& x = c.values(input_shape(w), make_input(c));
      auto& y = c.poisoned(output_shape(w));
      c.run([&](Backend& b, Side s) { b.avg_pool(w, x.f(s), y.f(s)); });
      c.expect("", y, kElementwise);  // the mean of at most 9 values, padding not counted
    });
    h_.check("avg_pool_backward", shape, [&](OpCase& c) {
      auto& dy = c.input(output_shape(w), -1.0f, 1.0f);
      auto& dx = c.poisoned(input_shape(w));
      c.run([&](Backend& b, Side s) { b.avg_pool_backward(w, dy.f(s), dx.f(s)); });
      c.expect("", dx, kElementwise);
    });
  }
}

// ---- batch normalisation: statistics -------------------------------------------------

void BackendComparison::batch_norm_statistics() {
  // Nonzero-mean inputs for the long column sums (Tolerances.h); the
  // zero-mean case is short.
  struct Sums {
    int64_t rows, channels;
    float lo;
  };
  // 3 and 16 channels: narrow tiles, several rows per warp; no rows: a
  // replica without examples in synchronised batch norm (sums of 0).
  for (const Sums& p : {Sums{50021, 32, -0.5f}, Sums{1000, 37, -1.0f}, Sums{1000, 1, -0.5f}, Sums{4099, 3, -0.5f},
                        Sums{2049, 16, -0.5f}, Sums{0, 32, -0.5f}}) {
    h_.check("channel_sums", dims({p.rows, p.channels}), [&](OpCase& c) {
      auto& x = c.input(Shape{p.rows, p.channels}, p.lo, 1.0f);
      auto& sum = c.poisoned(Shape{p.channels});
      auto& sumsq = c.poisoned(Shape{p.channels});
      c.run([&](Backend& b, Side s) { b.channel_sums(x.f(s), p.rows, p.channels, sum.f(s), sumsq.f(s)); });
      c.expect("sum", sum, summed(p.rows));
      c.expect("sumsq", sumsq, summed(p.rows));
    });
  }
  constexpr int64_t C = 37;
  constexpr float eps = 1e-3f;
  // Sums of `count` rows with means in [-1, 1) and variances in [0.1, 2):
  // sumsq / count - mean^2 then loses no more than a few bits in float. A
  // count of 0 (no rows anywhere) gives mean 0 and inv_std 1 / sqrt(eps).
  for (float count : {1000.0f, 0.0f}) {
    h_.check("batch_norm_stats", "channels 37 count " + num(count) + " eps " + num(eps), [&](OpCase& c) {
      const std::vector<float> m = c.uniform(C, -1.0f, 1.0f), v = c.uniform(C, 0.1f, 2.0f);
      std::vector<float> sums(2 * C + 1);
      for (int64_t k = 0; k < C; ++k) {
        sums[static_cast<size_t>(k)] = m[static_cast<size_t>(k)] * count;
        sums[static_cast<size_t>(C + k)] = (v[static_cast<size_t>(k)] + m[static_cast<size_t>(k)] * m[static_cast<size_t>(k)]) * count;
      }
      sums.back() = count;
      auto& in = c.values(Shape{2 * C + 1}, sums);
      auto& mean = c.poisoned(Shape{C});
      auto& inv_std = c.poisoned(Shape{C});
      c.run([&](Backend& b, Side s) { b.batch_norm_stats(in.f(s), C, eps, mean.f(s), inv_std.f(s)); });
      c.expect("mean", mean, kElementwise);
      c.expect("inv_std", inv_std, kElementwise);
    });
  }
  h_.check("batch_norm_inference_stats", "channels 37 eps " + num(eps), [&](OpCase& c) {
    auto& moving_mean = c.input(Shape{C}, -1.0f, 1.0f);
    auto& moving_var = c.input(Shape{C}, 0.1f, 2.0f);
    auto& mean = c.poisoned(Shape{C});
    auto& inv_std = c.poisoned(Shape{C});
    c.run([&](Backend& b, Side s) {
      b.batch_norm_inference_stats(moving_mean.f(s), moving_var.f(s), C, eps, mean.f(s), inv_std.f(s));
    });
    c.expect("mean", mean, kExact);  // a copy
    c.expect("inv_std", inv_std, kElementwise);
  });
  // count 0: a step without rows leaves the moving statistics unchanged.
  for (float count : {128.0f, 0.0f}) {
    h_.check("batch_norm_moving_update", "channels 37 count " + num(count) + " momentum 0.99", [&](OpCase& c) {
      auto& mean = c.input(Shape{C}, -1.0f, 1.0f);
      auto& inv_std = c.input(Shape{C}, 0.5f, 2.0f);
      auto& n = c.values(Shape{1}, {count});
      auto& moving_mean = c.input(Shape{C}, -1.0f, 1.0f);
      auto& moving_var = c.input(Shape{C}, 0.1f, 2.0f);
      c.run([&](Backend& b, Side s) {
        b.batch_norm_moving_update(mean.f(s), inv_std.f(s), n.f(s), C, eps, 0.99f, moving_mean.f(s), moving_var.f(s));
      });
      c.expect("moving_mean", moving_mean, kElementwise);
      c.expect("moving_var", moving_var, kElementwise);
    });
  }
}

// ---- batch normalisation: forward and backward ---------------------------------------

void BackendComparison::batch_norm_layers() {
  struct Layer {
    int64_t rows, channels;
    bool gamma, beta;
  };
  // Means below the data ([-1, -0.5) against x in [-0.5, 1)) make every xhat
  // positive, so the long sums of dy * xhat do not cancel (Tolerances.h).
  for (const Layer& p : {Layer{50021, 32, true, true}, Layer{1000, 37, false, false}, Layer{77, 1, true, false},
                         Layer{4099, 3, true, true}, Layer{2049, 16, false, true}}) {
    const std::string shape = dims({p.rows, p.channels}) + (p.gamma ? " gamma" : " gamma=null") + (p.beta ? " beta" : " beta=null");
    // And with the relu after it, in the same pass: x then reaches below the
    // mean, so about a third of the outputs are cut to 0.
    for (bool relu : {false, true})
      h_.check(relu ? "batch_norm_apply_relu" : "batch_norm_apply", shape, [&](OpCase& c) {
        auto& x = c.input(Shape{p.rows, p.channels}, relu ? -2.0f : -0.5f, 1.0f);
        auto& mean = c.input(Shape{p.channels}, -1.0f, -0.5f);
        auto& inv_std = c.input(Shape{p.channels}, 0.5f, 2.0f);
        Operand none;
        auto& gamma = p.gamma ? c.input(Shape{p.channels}, 0.5f, 1.5f) : none;
        auto& beta = p.beta ? c.input(Shape{p.channels}, -1.0f, 1.0f) : none;
        auto& y = c.poisoned(Shape{p.rows, p.channels});
        c.run([&](Backend& b, Side s) {
          if (relu)
            b.batch_norm_apply_relu(x.f(s), p.rows, p.channels, mean.f(s), inv_std.f(s), gamma.f(s), beta.f(s), y.f(s));
          else b.batch_norm_apply(x.f(s), p.rows, p.channels, mean.f(s), inv_std.f(s), gamma.f(s), beta.f(s), y.f(s));
        });
        c.expect("", y, kElementwise);
      });
    // Through the relu after it: its gradient taken from v = x * scale +
    // shift > 0 (about a third cut, x reaching below the mean as above) and
    // the backward sums of what passes, then dx of it. Both take these
    // inputs; the default Operand is a null gamma or beta.
    struct ReluBackward {
      Operand &dy, &x, &mean, &inv_std, &gamma, &beta;
    };
    Operand none;
    // What both backward applies take beside their inputs: per-channel sums
    // of the size a batch of this many rows gives (so dx is O(1)), the row
    // count, and dx.
    struct ApplySums {
      Operand &sum, &sum_xhat, &count, &dx;
    };
    const auto apply_sums = [&](OpCase& c) {
      const float scale = static_cast<float>(p.rows) * 0.5f;
      // Braced: drawn in this order.
      return ApplySums{c.input(Shape{p.channels}, -scale, scale), c.input(Shape{p.channels}, -scale, scale),
                       c.values(Shape{1}, {static_cast<float>(p.rows)}), c.poisoned(Shape{p.rows, p.channels})};
    };
    const auto relu_backward = [&](OpCase& c) {
      // Braced: drawn in this order.
      return ReluBackward{c.input(Shape{p.rows, p.channels}, -0.5f, 1.0f),
                          c.input(Shape{p.rows, p.channels}, -2.0f, 1.0f),
                          c.input(Shape{p.channels}, -1.0f, -0.5f),
                          c.input(Shape{p.channels}, 0.5f, 2.0f),
                          p.gamma ? c.input(Shape{p.channels}, 0.5f, 1.5f) : none,
                          p.beta ? c.input(Shape{p.channels}, -1.0f, 1.0f) : none};
    };
    h_.check("batch_norm_relu_backward_reduce", shape, [&](OpCase& c) {
      const ReluBackward in = relu_backward(c);
      auto& sum_dz = c.poisoned(Shape{p.channels});
      auto& sum_dz_xhat = c.poisoned(Shape{p.channels});
      c.run([&](Backend& b, Side s) {
        b.batch_norm_relu_backward_reduce(in.dy.f(s), in.x.f(s), p.rows, p.channels, in.mean.f(s), in.inv_std.f(s),
                                          in.gamma.f(s), in.beta.f(s), sum_dz.f(s), sum_dz_xhat.f(s));
      });
      c.expect("sum_dz", sum_dz, summed(p.rows));
      c.expect("sum_dz_xhat", sum_dz_xhat, summed(p.rows));
    });
    h_.check("batch_norm_relu_backward_apply", shape, [&](OpCase& c) {
      const ReluBackward in = relu_backward(c);
      const ApplySums a = apply_sums(c);
      c.run([&](Backend& b, Side s) {
        b.batch_norm_relu_backward_apply(in.dy.f(s), in.x.f(s), p.rows, p.channels, in.mean.f(s), in.inv_std.f(s),
                                         in.gamma.f(s), in.beta.f(s), a.sum.f(s), a.sum_xhat.f(s), a.count.f(s), a.dx.f(s));
      });
      c.expect("", a.dx, kElementwise);
    });
    h_.check("batch_norm_backward_reduce", dims({p.rows, p.channels}), [&](OpCase& c) {
      auto& dy = c.input(Shape{p.rows, p.channels}, -0.5f, 1.0f);
      auto& x = c.input(Shape{p.rows, p.channels}, -0.5f, 1.0f);
      auto& mean = c.input(Shape{p.channels}, -1.0f, -0.5f);
      auto& inv_std = c.input(Shape{p.channels}, 0.5f, 2.0f);
      auto& sum_dy = c.poisoned(Shape{p.channels});
      auto& sum_dy_xhat = c.poisoned(Shape{p.channels});
      c.run([&](Backend& b, Side s) {
        b.batch_norm_backward_reduce(dy.f(s), x.f(s), p.rows, p.channels, mean.f(s), inv_std.f(s), sum_dy.f(s),
                                     sum_dy_xhat.f(s));
      });
      c.expect("sum_dy", sum_dy, summed(p.rows));
      c.expect("sum_dy_xhat", sum_dy_xhat, summed(p.rows));
    });
    h_.check("batch_norm_backward_apply", dims({p.rows, p.channels}) + (p.gamma ? " gamma" : " gamma=null"), [&](OpCase& c) {
      auto& dy = c.input(Shape{p.rows, p.channels}, -1.0f, 1.0f);
      auto& x = c.input(Shape{p.rows, p.channels}, -0.5f, 1.0f);
      auto& mean = c.input(Shape{p.channels}, -1.0f, -0.5f);
      auto& inv_std = c.input(Shape{p.channels}, 0.5f, 2.0f);
      auto& gamma = p.gamma ? c.input(Shape{p.channels}, 0.5f, 1.5f) : none;
      const ApplySums a = apply_sums(c);
      c.run([&](Backend& b, Side s) {
        b.batch_norm_backward_apply(dy.f(s), x.f(s), p.rows, p.channels, mean.f(s), inv_std.f(s), gamma.f(s), a.sum.f(s),
                                    a.sum_xhat.f(s), a.count.f(s), a.dx.f(s));
      });
      c.expect("", a.dx, kElementwise);
    });
  }
}

}  // namespace strata::gpu_check
