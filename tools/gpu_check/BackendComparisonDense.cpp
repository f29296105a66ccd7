// The dense, element-wise, loss and scalar ops of the comparison.
#include <algorithm>
#include <cmath>

#include "BackendComparison.h"
#include "ShapeText.h"
#include "Tolerances.h"

namespace strata::gpu_check {

using Rule = OpCase::Rule;
using tolerance::kElementwise;
using tolerance::kExact;
using tolerance::summed;

namespace {
const char* name_of(Activation a) {
  switch (a) {
    case Activation::None: return "none";
    case Activation::Relu: return "relu";
    case Activation::Tanh: return "tanh";
    case Activation::Sigmoid: return "sigmoid";
    case Activation::Softmax: return "softmax";
  }
  return "?";
}

// The activation's output for x, as the backward kernels take it.
std::vector<float> activate(Activation a, const std::vector<float>& x, int64_t cols) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    switch (a) {
      case Activation::Relu: y[i] = std::max(x[i], 0.0f); break;
      case Activation::Tanh: y[i] = std::tanh(x[i]); break;
      case Activation::Sigmoid: y[i] = 1.0f / (1.0f + std::exp(-x[i])); break;
      default: y[i] = x[i];
    }
  }
  if (a == Activation::Softmax)
    for (size_t r = 0; r < x.size() / static_cast<size_t>(cols); ++r) {
      float* row = y.data() + r * static_cast<size_t>(cols);
      const float mx = *std::max_element(row, row + cols);
      double s = 0;
      for (int64_t c = 0; c < cols; ++c) s += (row[c] = std::exp(row[c] - mx));
      for (int64_t c = 0; c < cols; ++c) row[c] = static_cast<float>(row[c] / s);
    }
  return y;
}

// Values from {0, 1, 2, 3}: rows with ties for argmax.
std::vector<float> quantized(OpCase& c, int64_t n) {
  std::vector<float> v = c.uniform(n, 0.0f, 4.0f);
  for (auto& x : v) x = std::floor(x);
  return v;
}

int32_t first_argmax(const float* row, int64_t cols) {
  return static_cast<int32_t>(std::max_element(row, row + cols) - row);  // the first of equal maxima
}
}  // namespace

// ---- gemm ---------------------------------------------------------------------

void BackendComparison::gemm() {
  struct Case {
    int64_t m, n, k;
    bool ta, tb;
    float alpha, beta, lo;  // inputs uniform in [lo, 1)
  };
  std::vector<Case> cases;
  // All four layouts with beta 0 (C poisoned: it must not be read) and beta 1,
  // on odd sizes; zero-mean inputs so each dot product cancels (TF32 fails here).
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (float beta : {0.0f, 1.0f}) cases.push_back({37, 19, 53, ta, tb, beta == 0.0f ? 1.0f : 0.75f, beta, -1.0f});
  cases.push_back({37, 19, 53, false, false, -1.5f, 0.5f, -1.0f});
  cases.push_back({65, 1, 33, false, false, 1.0f, 0.0f, -1.0f});  // one column: a single-unit layer
  cases.push_back({1, 40, 300, true, false, 1.0f, 1.0f, -1.0f});  // one row
  // An empty product (a replica with no examples): C = 0 from poison, or C unchanged.
  cases.push_back({37, 19, 0, false, false, 1.0f, 0.0f, -1.0f});
  cases.push_back({37, 19, 0, true, true, 1.0f, 1.0f, -1.0f});
  // Large, in the layouts of a dense layer's forward (NN), weight gradient
  // (TN: X^T dY) and input gradient (NT: dY W^T). Long dot products take
  // nonzero-mean inputs (Tolerances.h).
  cases.push_back({1031, 1029, 1500, false, false, 1.0f, 1.0f, -0.5f});
  cases.push_back({784, 257, 1031, true, false, 1.0f, 0.0f, -0.5f});
  cases.push_back({1031, 784, 257, false, true, 1.0f, 0.0f, -0.5f});
  for (const Case& g : cases) {
    const std::string shape = "m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) +
                              " " + (g.ta ? "T" : "N") + (g.tb ? "T" : "N") + " alpha=" + num(g.alpha) +
                              " beta=" + num(g.beta);
    h_.check("gemm", shape, [&](OpCase& c) {
      auto& a = c.input(g.ta ? Shape{g.k, g.m} : Shape{g.m, g.k}, g.lo, 1.0f);
      auto& b = c.input(g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n}, g.lo, 1.0f);
      auto& out = g.beta == 0.0f ? c.poisoned(Shape{g.m, g.n}) : c.input(Shape{g.m, g.n}, -1.0f, 1.0f);
      c.run([&](Backend& be, Side s) { be.gemm(g.ta, g.tb, g.m, g.n, g.k, g.alpha, a.f(s), b.f(s), g.beta, out.f(s)); });
      c.expect("", out, g.k == 0 ? kExact : summed(g.k));
    });
  }
  // The dense layer's forward product with its bias (the GPU's epilogue):
  // odd sizes, the MLP's first layer at batch 128, a long product, a bias
  // only 4-byte aligned (the epilogue's algorithm depends on it), and an
  // empty product (C = the bias on every row).
  struct BiasCase {
    int64_t m, n, k;
    bool ta, tb;
    int64_t bias_offset;  // floats into its buffer
  };
  for (const BiasCase& g : {BiasCase{37, 19, 53, false, false, 0}, BiasCase{37, 19, 53, true, true, 0},
                            BiasCase{128, 256, 784, false, false, 0}, BiasCase{1031, 1029, 1500, false, false, 0},
                            BiasCase{128, 256, 784, false, false, 1}, BiasCase{37, 19, 0, false, false, 0}}) {
    const std::string shape = "m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) + " " +
                              (g.ta ? "T" : "N") + (g.tb ? "T" : "N") +
                              (g.bias_offset ? " bias+" + std::to_string(g.bias_offset) : "");
    h_.check("gemm_bias", shape, [&](OpCase& c) {
      const float lo = g.k > 100 ? -0.5f : -1.0f;
      auto& a = c.input(g.ta ? Shape{g.k, g.m} : Shape{g.m, g.k}, lo, 1.0f);
      auto& b = c.input(g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n}, lo, 1.0f);
      auto& bias = c.input(Shape{g.n + g.bias_offset}, -1.0f, 1.0f);
      auto& out = c.poisoned(Shape{g.m, g.n});
      c.run([&](Backend& be, Side s) {
        be.gemm_bias(g.ta, g.tb, g.m, g.n, g.k, a.f(s), b.f(s), bias.f(s) + g.bias_offset, out.f(s));
      });
      c.expect("", out, g.k == 0 ? kExact : summed(g.k));
    });
  }
}

// ---- per-row and per-column ops -------------------------------------------------

void BackendComparison::rows() {
  for (auto [r, cols] : {std::pair<int64_t, int64_t>{1000, 37}, {77, 1}, {4099, 300}}) {
    h_.check("add_bias_rows", dims({r, cols}), [&](OpCase& c) {
      auto& y = c.input(Shape{r, cols}, -1.0f, 1.0f);
      auto& bias = c.input(Shape{cols}, -1.0f, 1.0f);
      c.run([&](Backend& b, Side s) { b.add_bias_rows(y.f(s), bias.f(s), r, cols); });
      c.expect("", y, kElementwise);
    });
    h_.check("scale_rows", dims({r, cols}), [&](OpCase& c) {
      auto& x = c.input(Shape{r, cols}, -1.0f, 1.0f);
      auto& scale = c.input(Shape{r}, -2.0f, 2.0f);
      auto& y = c.poisoned(Shape{r, cols});
      c.run([&](Backend& b, Side s) { b.scale_rows(x.f(s), scale.f(s), r, cols, y.f(s)); });
      c.expect("", y, kElementwise);
    });
  }
  struct Sum {
    int64_t rows, cols;
    bool accumulate;
    float lo;
  };
  // No rows with accumulate false: the bias gradient of a replica without
  // examples, which must come out 0 (out is poisoned).
  for (const Sum& p : {Sum{1000, 37, false, -0.5f}, Sum{1000, 37, true, -0.5f}, Sum{33, 1, false, -1.0f},
                       Sum{0, 37, false, -1.0f}, Sum{70001, 17, true, -0.5f}}) {
    h_.check("sum_rows", dims({p.rows, p.cols}) + (p.accumulate ? " accumulate" : " overwrite"), [&](OpCase& c) {
      auto& x = c.input(Shape{p.rows, p.cols}, p.lo, 1.0f);
      // What out accumulates onto is of the sum's own scale and sign (the
      // positive-mean rows sum to ~rows / 4): next to a sum of 17,500 a start
      // in [-1, 1) would be within tolerance of being ignored.
      const float r = static_cast<float>(p.rows);
      auto& out = p.accumulate ? c.input(Shape{p.cols}, 0.1f * r, 0.3f * r) : c.poisoned(Shape{p.cols});
      c.run([&](Backend& b, Side s) { b.sum_rows(x.f(s), p.rows, p.cols, out.f(s), p.accumulate); });
      c.expect("", out, summed(p.rows));
    });
  }
}

// ---- activations --------------------------------------------------------------

void BackendComparison::activations() {
  struct Act {
    Activation act;
    int64_t rows, cols;
  };
  std::vector<Act> cases;
  for (Activation a : {Activation::None, Activation::Relu, Activation::Tanh, Activation::Sigmoid, Activation::Softmax})
    cases.push_back({a, 1000, 37});
  cases.push_back({Activation::Softmax, 33, 1});       // a one-class softmax is all ones
  cases.push_back({Activation::Softmax, 1100, 1000});  // long rows, > 2^20 elements
  cases.push_back({Activation::Tanh, 1100, 1000});
  cases.push_back({Activation::Relu, 0, 37});
  for (const Act& p : cases) {
    // Softmax sums its row: the tolerance of a sum of `cols` terms.
    const double tol = p.act == Activation::Softmax ? summed(p.cols) : kElementwise;
    h_.check("activation_forward", std::string(name_of(p.act)) + " " + dims({p.rows, p.cols}), [&](OpCase& c) {
      auto& x = c.input(Shape{p.rows, p.cols}, -4.0f, 4.0f);
      auto& y = c.poisoned(Shape{p.rows, p.cols});
      c.run([&](Backend& b, Side s) { b.activation_forward(p.act, x.f(s), y.f(s), p.rows, p.cols); });
      c.expect("", y, tol);
    });
    if (p.rows == 0) continue;
    h_.check("activation_backward", std::string(name_of(p.act)) + " " + dims({p.rows, p.cols}), [&](OpCase& c) {
      // y is the activation's output (relu's has exact zeros: its gradient is 0 there).
      auto& y = c.values(Shape{p.rows, p.cols}, activate(p.act, c.uniform(p.rows * p.cols, -4.0f, 4.0f), p.cols));
      auto& dy = c.input(Shape{p.rows, p.cols}, -1.0f, 1.0f);
      auto& dx = c.poisoned(Shape{p.rows, p.cols});
      c.run([&](Backend& b, Side s) { b.activation_backward(p.act, y.f(s), dy.f(s), dx.f(s), p.rows, p.cols); });
      c.expect("", dx, tol);
    });
  }
  // The bias and the activation in one pass (layers' outputs): relu, tanh,
  // sigmoid; softmax and no bias take the two separate calls.
  for (Activation act : {Activation::Relu, Activation::Tanh, Activation::Sigmoid, Activation::Softmax}) {
    for (auto [r, cols] : {std::pair<int64_t, int64_t>{1000, 37}, {4099, 300}}) {
      h_.check("bias_activation", std::string(name_of(act)) + " " + dims({r, cols}), [&](OpCase& c) {
        auto& y = c.input(Shape{r, cols}, -4.0f, 4.0f);
        auto& bias = c.input(Shape{cols}, -1.0f, 1.0f);
        c.run([&](Backend& b, Side s) { b.bias_activation(act, y.f(s), bias.f(s), r, cols); });
        c.expect("", y, act == Activation::Softmax ? summed(cols) : kElementwise);
      });
    }
  }
  // The gradient through the activation with the bias's in one pass (a GPU
  // sums in the pass that writes dx, with its last block adding the blocks'
  // partial sums): the MLP's and the CNN's pooled shapes, many blocks and
  // channel tiles, one column, no rows (dbias 0). Each case runs twice, the
  // second time on the first's dx, so a reduction that did not leave its
  // tickets ready for the next launch shows in the second dbias.
  struct BiasAct {
    Activation act;
    int64_t rows, cols;
  };
  for (const BiasAct& p :
       {BiasAct{Activation::Relu, 128, 256}, BiasAct{Activation::Relu, 12544, 32}, BiasAct{Activation::Relu, 200704, 32},
        BiasAct{Activation::Tanh, 4099, 300}, BiasAct{Activation::Sigmoid, 70001, 17}, BiasAct{Activation::None, 1000, 37},
        BiasAct{Activation::Relu, 33, 1}, BiasAct{Activation::Relu, 0, 37}, BiasAct{Activation::Softmax, 1000, 37}}) {
    h_.check("bias_activation_backward", std::string(name_of(p.act)) + " " + dims({p.rows, p.cols}), [&](OpCase& c) {
      auto& y = c.values(Shape{p.rows, p.cols}, activate(p.act, c.uniform(p.rows * p.cols, -4.0f, 4.0f), p.cols));
      // Nonzero-mean gradients: the column sums do not cancel (Tolerances.h).
      auto& dy = c.input(Shape{p.rows, p.cols}, -0.5f, 1.0f);
      auto& dx = c.poisoned(Shape{p.rows, p.cols});
      auto& dx2 = c.poisoned(Shape{p.rows, p.cols});
      auto& dbias = c.poisoned(Shape{p.cols});
      auto& dbias2 = c.poisoned(Shape{p.cols});
      c.run([&](Backend& b, Side s) {
        b.bias_activation_backward(p.act, y.f(s), dy.f(s), dx.f(s), dbias.f(s), p.rows, p.cols);
        b.bias_activation_backward(p.act, y.f(s), dx.f(s), dx2.f(s), dbias2.f(s), p.rows, p.cols);
      });
      const double elementwise = p.act == Activation::Softmax ? summed(p.cols) : kElementwise;
      c.expect("dx", dx, elementwise);
      c.expect("dx2", dx2, elementwise);
      c.expect("dbias", dbias, summed(p.rows));
      c.expect("dbias2", dbias2, summed(p.rows));
    });
  }
  // y may alias x (layers apply activations in place).
  h_.check("activation_forward", "sigmoid 1000x37 in place", [&](OpCase& c) {
    auto& x = c.input(Shape{1000, 37}, -4.0f, 4.0f);
    c.run([&](Backend& b, Side s) { b.activation_forward(Activation::Sigmoid, x.f(s), x.f(s), 1000, 37); });
    c.expect("", x, kElementwise);
  });
}

// ---- losses -------------------------------------------------------------------

void BackendComparison::losses() {
  struct Loss {
    int64_t rows, cols;
    bool gradient;
  };
  for (const Loss& p : {Loss{1000, 10, true}, Loss{1000, 10, false}, Loss{33, 1, true}, Loss{4099, 300, true}}) {
    const std::string shape = dims({p.rows, p.cols}) + (p.gradient ? "" : " dlogits=null");
    const bool bad_labels = p.rows > 500;
    h_.check("sparse_softmax_xent", shape + (bad_labels ? " labels -1,C,1000 at rows 3,500,last" : ""), [&](OpCase& c) {
      auto& logits = c.input(Shape{p.rows, p.cols}, -5.0f, 5.0f);
      std::vector<int32_t> y = c.integers(p.rows, 0, static_cast<int32_t>(p.cols));
      if (bad_labels) {
        // Out of range: loss 0 and no gradient (check_labels reports them).
        y[3] = -1;
        y[500] = static_cast<int32_t>(p.cols);
        y.back() = 1000;
      }
      auto& labels = c.ints(Shape{p.rows}, y);
      auto& loss = c.poisoned(Shape{p.rows});
      Operand none;
      auto& dlogits = p.gradient ? c.poisoned(Shape{p.rows, p.cols}) : none;
      c.run([&](Backend& b, Side s) { b.sparse_softmax_xent(logits.f(s), labels.i(s), p.rows, p.cols, loss.f(s), dlogits.f(s)); });
      c.expect("loss", loss, summed(p.cols));
      if (p.gradient) c.expect("dlogits", dlogits, summed(p.cols));
    });
  }
  // A replica's share of the mean loss with its gradient (a GPU's one kernel
  // up to 256 rows of at most 32768 elements, three otherwise): the MLP's and
  // CNN's batches, both sides of the one-kernel limits, a bad label (the
  // error flag, already holding an earlier report in one case), no flag, no
  // rows.
  struct Average {
    int64_t rows, cols;
    bool bad_label, flag, flag_set;
  };
  for (const Average& p :
       {Average{64, 10, false, true, false}, Average{128, 10, true, true, false}, Average{256, 10, true, true, true},
        Average{257, 10, true, true, false}, Average{1000, 300, false, false, false}, Average{0, 10, false, true, false},
        Average{64, 1000, false, false, false}}) {
    const std::string shape = dims({p.rows, p.cols}) + (p.bad_label ? " label C at row 7" : "") +
                              (!p.flag      ? " no flag"
                               : p.flag_set ? " flag already set"
                                            : "");
    h_.check("sparse_softmax_xent_average", shape, [&](OpCase& c) {
      auto& logits = c.input(Shape{p.rows, p.cols}, -5.0f, 5.0f);
      std::vector<int32_t> y = c.integers(p.rows, 0, static_cast<int32_t>(p.cols));
      if (p.bad_label) y[7] = static_cast<int32_t>(p.cols);
      auto& labels = c.ints(Shape{p.rows}, y);
      auto& scale = c.values(Shape{1}, {1.0f / 512.0f});
      Operand none;
      auto& error = p.flag ? c.values(Shape{2}, {p.flag_set ? 2.0f : 0.0f, p.flag_set ? 11.0f : 0.0f}) : none;
      auto& loss = c.poisoned(Shape{p.rows});
      auto& dlogits = c.poisoned(Shape{p.rows, p.cols});
      auto& total = c.poisoned(Shape{1});
      c.run([&](Backend& b, Side s) {
        b.sparse_softmax_xent_average(logits.f(s), labels.i(s), p.rows, p.cols, scale.f(s), error.f(s), loss.f(s),
                                      dlogits.f(s), total.f(s));
      });
      c.expect("loss", loss, summed(p.cols));
      c.expect("dlogits", dlogits, summed(p.cols));
      c.expect("total", total, summed(p.rows * p.cols));
      if (p.flag) c.expect("error", error, kExact);
    });
  }
  // Dense targets: probability rows, and rows not summing to 1 (label smoothing, mixup).
  for (const Loss& p : {Loss{1000, 10, true}, Loss{1000, 10, false}, Loss{4099, 300, true}}) {
    for (bool normalised : {true, false}) {
      if (!normalised && p.rows > 1000) continue;
      const std::string shape = dims({p.rows, p.cols}) + (normalised ? " targets sum 1" : " targets unnormalised") +
                                (p.gradient ? "" : " dlogits=null");
      h_.check("softmax_xent", shape, [&](OpCase& c) {
        auto& logits = c.input(Shape{p.rows, p.cols}, -5.0f, 5.0f);
        std::vector<float> t = c.uniform(p.rows * p.cols, 0.0f, 1.0f);
        if (normalised)
          for (int64_t r = 0; r < p.rows; ++r) {
            float sum = 0;
            for (int64_t k = 0; k < p.cols; ++k) sum += t[static_cast<size_t>(r * p.cols + k)];
            for (int64_t k = 0; k < p.cols; ++k) t[static_cast<size_t>(r * p.cols + k)] /= sum;
          }
        auto& targets = c.values(Shape{p.rows, p.cols}, t);
        auto& loss = c.poisoned(Shape{p.rows});
        Operand none;
        auto& dlogits = p.gradient ? c.poisoned(Shape{p.rows, p.cols}) : none;
        c.run([&](Backend& b, Side s) { b.softmax_xent(logits.f(s), targets.f(s), p.rows, p.cols, loss.f(s), dlogits.f(s)); });
        c.expect("loss", loss, summed(p.cols));
        if (p.gradient) c.expect("dlogits", dlogits, summed(p.cols));
      });
    }
  }
}

// ---- element-wise -------------------------------------------------------------

void BackendComparison::elementwise() {
  struct Axpby {
    int64_t n;
    float alpha, beta;
  };
  // beta 0: y is not read (poisoned, it must still come out finite).
  for (const Axpby& p : {Axpby{1000003, -1.5f, 0.0f}, Axpby{1000003, 2.0f, 0.5f}, Axpby{1, 1.0f, 1.0f}, Axpby{37, 0.0f, 0.0f}}) {
    h_.check("axpby", dims({p.n}) + " alpha=" + num(p.alpha) + " beta=" + num(p.beta), [&](OpCase& c) {
      auto& x = c.input(Shape{p.n}, -1.0f, 1.0f);
      auto& y = p.beta == 0.0f ? c.poisoned(Shape{p.n}) : c.input(Shape{p.n}, -1.0f, 1.0f);
      c.run([&](Backend& b, Side s) { b.axpby(p.n, p.alpha, x.f(s), p.beta, y.f(s)); });
      c.expect("", y, kElementwise);
    });
  }
  // Dropout draws the same counter-based numbers everywhere (core/Rng.h):
  // mask and output must be equal, not close. A call number past 2^16 checks
  // the key's (call << 16) in 64 bits, a counter past 2^32 the counter's width.
  // Call numbers past 2^24 (where a float would stop counting) and past
  // 2^31 (read as unsigned) check the counter's integer path.
  struct Drop {
    int64_t n;
    float rate;
    uint32_t call;
    uint64_t stream, counter;
  };
  for (const Drop& p :
       {Drop{1048583, 0.3f, 3, 5, 12345}, Drop{37, 0.5f, 70000, 1, uint64_t{1} << 40}, Drop{1000, 0.0f, 0, 0, 0},
        Drop{4099, 0.5f, (1u << 24) + 1, 2, 7}, Drop{4099, 0.5f, 0x80000005u, 2, 7}}) {
    const std::string shape = dims({p.n}) + " rate=" + num(p.rate) + " call=" + std::to_string(p.call) +
                              " counter=" + std::to_string(p.counter);
    h_.check("dropout", shape, [&](OpCase& c) {
      const uint64_t seed = c.rng().next();
      auto& x = c.input(Shape{p.n}, -1.0f, 1.0f);
      auto& call = c.ints(Shape{1}, {static_cast<int32_t>(p.call)});
      auto& y = c.poisoned(Shape{p.n});
      auto& mask = c.poisoned(Shape{p.n});
      c.run([&](Backend& b, Side s) {
        b.dropout(p.n, p.rate, seed, p.stream, call.i(s), p.counter, x.f(s), y.f(s), mask.f(s));
      });
      c.expect("y", y, kExact);
      c.expect("mask", mask, kExact);
    });
  }
  for (int64_t n : {int64_t{1000003}, int64_t{1}}) {
    h_.check("mul", dims({n}), [&](OpCase& c) {
      auto& a = c.input(Shape{n}, -2.0f, 2.0f);
      auto& b = c.input(Shape{n}, -2.0f, 2.0f);
      auto& y = c.poisoned(Shape{n});
      c.run([&](Backend& be, Side s) { be.mul(n, a.f(s), b.f(s), y.f(s)); });
      c.expect("", y, kElementwise);
    });
  }
  // x straddles both ends of the clamp [eps, 1 - eps]; the backward gives
  // dy / x (up to 1 / eps) inside, 0 outside.
  for (auto [n, eps] : {std::pair<int64_t, float>{100003, 1e-3f}, std::pair<int64_t, float>{1000003, 1e-7f}}) {
    const std::string shape = dims({n}) + " eps=" + num(eps) + " x in [-0.2, 1.2)";
    h_.check("log_clamp", shape, [&](OpCase& c) {
      auto& x = c.input(Shape{n}, -0.2f, 1.2f);
      auto& y = c.poisoned(Shape{n});
      c.run([&](Backend& b, Side s) { b.log_clamp(n, x.f(s), eps, y.f(s)); });
      c.expect("", y, kElementwise);
    });
    h_.check("log_clamp_backward", shape, [&](OpCase& c) {
      auto& x = c.input(Shape{n}, -0.2f, 1.2f);
      auto& dy = c.input(Shape{n}, -1.0f, 1.0f);
      auto& dx = c.poisoned(Shape{n});
      c.run([&](Backend& b, Side s) { b.log_clamp_backward(n, x.f(s), eps, dy.f(s), dx.f(s)); });
      c.expect("", dx, kElementwise);
    });
  }
  struct Pixels {
    int64_t rows, features;
    bool normalise;
  };
  for (const Pixels& p : {Pixels{1500, 784, false}, Pixels{1500, 784, true}, Pixels{33, 1, true}}) {
    h_.check("pixels_to_float", dims({p.rows, p.features}) + (p.normalise ? " mean/inv_std" : " scale only"), [&](OpCase& c) {
      std::vector<uint8_t> px(static_cast<size_t>(p.rows * p.features));
      for (auto& v : px) v = static_cast<uint8_t>(c.rng().below(256));
      auto& in = c.bytes(Shape{p.rows, p.features}, px);
      Operand none;
      auto& mean = p.normalise ? c.input(Shape{p.features}, 0.2f, 0.5f) : none;
      auto& inv_std = p.normalise ? c.input(Shape{p.features}, 2.0f, 4.0f) : none;
      auto& out = c.poisoned(Shape{p.rows, p.features});
      c.run([&](Backend& b, Side s) {
        b.pixels_to_float(p.rows, p.features, in.u8(s), 1.0f / 255.0f, mean.f(s), inv_std.f(s), out.f(s));
      });
      c.expect("", out, kElementwise);
    });
  }
  // A batch gathered from the training set kept on the device: image rows
  // (whole words), labels, and a row size that is not (byte by byte). The
  // output is compared as words; a last partial word stays poison on both sides.
  for (const int64_t row_bytes : {int64_t{784}, int64_t{4}, int64_t{3}}) {
    const int64_t table_rows = 1000, n = 777;
    h_.check("gather_rows",
             std::to_string(n) + " of " + std::to_string(table_rows) + " rows of " + std::to_string(row_bytes) + " bytes",
             [&](OpCase& c) {
               std::vector<uint8_t> bytes(static_cast<size_t>(table_rows * row_bytes));
               for (auto& v : bytes) v = static_cast<uint8_t>(c.rng().below(256));
               auto& table = c.bytes(Shape{table_rows * row_bytes}, bytes);
               auto& rows = c.ints(Shape{n}, c.integers(n, 0, static_cast<int32_t>(table_rows)));
               auto& out = c.poisoned(Shape{(n * row_bytes + 3) / 4}, DType::Int32);
               c.run([&](Backend& b, Side s) { b.gather_rows(table.u8(s), row_bytes, rows.i(s), n, out.u8(s)); });
               c.expect("", out, kExact, Rule::Bits);
             });
  }
  // The same batch gathered and converted in one pass, with its labels:
  // image rows of whole words (vector loads) and rows that are not, with
  // the dataset's normalisation and without.
  for (const Pixels& p : {Pixels{777, 784, true}, Pixels{777, 784, false}, Pixels{333, 3, true}}) {
    const int64_t table_rows = 1000, n = p.rows;
    h_.check("gather_examples",
             std::to_string(n) + " of " + std::to_string(table_rows) + " rows of " + std::to_string(p.features) + " bytes" +
                 (p.normalise ? " mean/inv_std" : " scale only"),
             [&](OpCase& c) {
               std::vector<uint8_t> px(static_cast<size_t>(table_rows * p.features));
               for (auto& v : px) v = static_cast<uint8_t>(c.rng().below(256));
               auto& pixels = c.bytes(Shape{table_rows * p.features}, px);
               auto& labels = c.ints(Shape{table_rows}, c.integers(table_rows, 0, 10));
               auto& rows = c.ints(Shape{n}, c.integers(n, 0, static_cast<int32_t>(table_rows)));
               Operand none;
               auto& mean = p.normalise ? c.input(Shape{p.features}, 0.2f, 0.5f) : none;
               auto& inv_std = p.normalise ? c.input(Shape{p.features}, 2.0f, 4.0f) : none;
               auto& features = c.poisoned(Shape{n, p.features});
               auto& got_labels = c.poisoned(Shape{n}, DType::Int32);
               c.run([&](Backend& b, Side s) {
                 b.gather_examples(pixels.u8(s), p.features, labels.i(s), rows.i(s), n, 1.0f / 255.0f, mean.f(s),
                                   inv_std.f(s), features.f(s), got_labels.i(s));
               });
               c.expect("features", features, kElementwise);  // as pixels_to_float
               c.expect("labels", got_labels, kExact, Rule::Bits);
             });
  }
}

// ---- scalars kept on the device ----------------------------------------------------

void BackendComparison::scalars() {
  struct Sum {
    int64_t n;
    float lo, scale;
  };
  // The mean loss of a large batch (scale 1/n), one term, and a zero-mean sum.
  for (const Sum& p : {Sum{1000003, -0.5f, 1.0f / 1000003.0f}, Sum{1, -1.0f, 2.0f}, Sum{1000, -1.0f, 1.0f}}) {
    h_.check("scaled_sum", dims({p.n}) + " scale=" + num(p.scale), [&](OpCase& c) {
      auto& x = c.input(Shape{p.n}, p.lo, 1.0f);
      auto& scale = c.values(Shape{1}, {p.scale});
      auto& out = c.poisoned(Shape{1});
      c.run([&](Backend& b, Side s) { b.scaled_sum(p.n, x.f(s), scale.f(s), out.f(s)); });
      c.expect("", out, summed(p.n));
    });
  }
  for (int64_t n : {int64_t{1000003}, int64_t{1}}) {
    h_.check("broadcast_scaled", dims({n}), [&](OpCase& c) {
      auto& g = c.values(Shape{1}, {0.37f});
      auto& scale = c.values(Shape{1}, {1.0f / 128.0f});
      auto& y = c.poisoned(Shape{n});
      c.run([&](Backend& b, Side s) { b.broadcast_scaled(n, g.f(s), scale.f(s), y.f(s)); });
      c.expect("", y, kElementwise);
    });
  }
  // A step counter (one element), and many.
  for (auto [n, value] : {std::pair<int64_t, float>{1, 1.0f}, std::pair<int64_t, float>{1000003, 0.25f}}) {
    h_.check("add_scalar", dims({n}) + " +" + num(value), [&](OpCase& c) {
      auto& x = n == 1 ? c.values(Shape{1}, {41.0f}) : c.input(Shape{n}, -1.0f, 1.0f);
      c.run([&](Backend& b, Side s) { b.add_scalar(n, value, x.f(s)); });
      c.expect("", x, kElementwise);
    });
  }
  // Dropout's call counter: exact past 2^24, unsigned past 2^31, wrapping at 2^32.
  h_.check("increment", "3 counters", [&](OpCase& c) {
    auto& x = c.ints(Shape{3}, {1 << 24, 0x7fffffff, -1});
    c.run([&](Backend& b, Side s) { b.increment(3, x.i(s)); });
    c.expect("", x, 0);
  });
}

// ---- metrics and the label error flag -----------------------------------------------

void BackendComparison::metrics() {
  struct Arg {
    int64_t rows, cols;
    const char* kind;  // "ties": values from {0..3}; "equal": one value per row; "random"
  };
  for (const Arg& p : {Arg{1000, 10, "ties"}, Arg{64, 37, "equal"}, Arg{77, 1, "random"}, Arg{4099, 300, "random"}}) {
    const std::string kind = p.kind;
    h_.check("argmax_rows", dims({p.rows, p.cols}) + " " + kind, [&](OpCase& c) {
      std::vector<float> v = kind == "ties" ? quantized(c, p.rows * p.cols) : c.uniform(p.rows * p.cols, -1.0f, 1.0f);
      if (kind == "equal") std::fill(v.begin(), v.end(), 0.5f);
      auto& x = c.values(Shape{p.rows, p.cols}, v);
      auto& out = c.poisoned(Shape{p.rows}, DType::Int32);
      c.run([&](Backend& b, Side s) { b.argmax_rows(x.f(s), p.rows, p.cols, out.i(s)); });
      c.expect("", out, kExact);
    });
    if (kind == "equal") continue;
    h_.check("count_correct", dims({p.rows, p.cols}) + " " + kind + ", count from 5", [&](OpCase& c) {
      std::vector<float> v = kind == "ties" ? quantized(c, p.rows * p.cols) : c.uniform(p.rows * p.cols, -1.0f, 1.0f);
      // Half the labels are the prediction (the first of tied maxima), the
      // rest random, some out of range (never correct).
      std::vector<int32_t> y = c.integers(p.rows, -1, static_cast<int32_t>(p.cols) + 1);
      for (int64_t r = 0; r < p.rows; r += 2) y[static_cast<size_t>(r)] = first_argmax(v.data() + r * p.cols, p.cols);
      auto& x = c.values(Shape{p.rows, p.cols}, v);
      auto& labels = c.ints(Shape{p.rows}, y);
      auto& count = c.values(Shape{1}, {5.0f});
      c.run([&](Backend& b, Side s) { b.count_correct(x.f(s), labels.i(s), p.rows, p.cols, count.f(s)); });
      c.expect("", count, kExact);
    });
    // The step's figures in one call (a GPU's one kernel against the CPU's
    // five calls): loss, correct count, the error flag moved and cleared.
    for (bool with_labels : {true, false})
      h_.check("gather_step_stats", dims({p.rows, p.cols}) + " " + kind + (with_labels ? "" : ", no labels"), [&](OpCase& c) {
        auto& x = c.input(Shape{p.rows, p.cols}, -1.0f, 1.0f);
        auto& labels = c.ints(Shape{p.rows}, c.integers(p.rows, 0, static_cast<int32_t>(p.cols)));
        auto& loss = c.values(Shape{1}, {2.5f});
        auto& error = c.values(Shape{2}, {3.0f, 11.0f});
        auto& stats = c.poisoned(Shape{4});
        c.run([&](Backend& b, Side s) {
          b.gather_step_stats(loss.f(s), x.f(s), with_labels ? labels.i(s) : nullptr, with_labels ? p.rows : 0, p.cols,
                              error.f(s), stats.f(s));
        });
        c.expect("stats", stats, kExact);
        c.expect("error", error, kExact);
      });
  }
  // The flag's second word keeps "the first bad label seen": a parallel
  // kernel may see another one first, so each case has one bad value only.
  struct Labels {
    int64_t n;
    int32_t bad;
    int bad_count;
    float prior_count, prior_label;  // the flag before (an earlier batch's report)
  };
  for (const Labels& p : {Labels{1000, 10, 3, 0, 0}, Labels{1000, -3, 1, 0, 0}, Labels{1000, 0, 0, 0, 0},
                          Labels{1000, 12, 4, 2, 7}, Labels{1000003, 11, 5, 0, 0}}) {
    const std::string bad = p.bad_count ? std::to_string(p.bad_count) + " bad (" + std::to_string(p.bad) + ")" : "none bad";
    const std::string shape = dims({p.n}) + " classes=10, " + bad + (p.prior_count > 0 ? ", flag already set" : "");
    h_.check("check_labels", shape, [&](OpCase& c) {
      std::vector<int32_t> y = c.integers(p.n, 0, 10);
      // One bad label in each of bad_count equal stretches: distinct places, anywhere.
      const int64_t stretch = p.n / std::max(1, p.bad_count);
      for (int i = 0; i < p.bad_count; ++i)
        y[static_cast<size_t>(i * stretch + static_cast<int64_t>(c.rng().below(static_cast<uint64_t>(stretch))))] = p.bad;
      auto& labels = c.ints(Shape{p.n}, y);
      auto& error = c.values(Shape{2}, {p.prior_count, p.prior_label});
      c.run([&](Backend& b, Side s) { b.check_labels(labels.i(s), p.n, 10, error.f(s)); });
      c.expect("", error, kExact);
    });
  }
}

}  // namespace strata::gpu_check
