#include "BackendComparison.h"

#include "ShapeText.h"
#include "Tolerances.h"

namespace strata::gpu_check {

using Rule = OpCase::Rule;
using tolerance::kElementwise;
using tolerance::kExact;

BackendComparison::BackendComparison(const Device& device, uint64_t seed, OpHarness::Observer observer, Backend* backend)
    : h_(device, seed, std::move(observer), backend) {}

std::vector<CheckRecord> BackendComparison::run() {
  // Memory first: every other check reads its results back through copy_to_host.
  memory();
  gemm();
  rows();
  activations();
  losses();
  elementwise();
  scalars();
  metrics();
  images();
  convolution();
  pooling();
  batch_norm_statistics();
  batch_norm_layers();
  optimizers();
  return h_.records();
}

// ---- DeviceMemory: copies and fills must be bit-exact -----------------------

void BackendComparison::memory() {
  // More than 2^20 floats (many blocks or copy chunks), one, and an odd count.
  for (int64_t n : {int64_t{1500007}, int64_t{1}, int64_t{33}}) {
    h_.check("copy_from_host", dims({n}), [&](OpCase& c) {
      const std::vector<float> src = c.uniform(n, -1.0f, 1.0f);
      auto& dst = c.poisoned(Shape{n});
      c.run([&](Backend& b, Side s) { b.copy_from_host(dst.f(s), src.data(), src.size() * sizeof(float)); });
      c.expect("", dst, kExact, Rule::Bits);
    });
  }
  // Into host memory: the whole buffer, and a range from an offset into the
  // middle of a poisoned host buffer (the words around it must stay poison).
  for (int64_t n : {int64_t{1500007}, int64_t{1000}}) {
    const int64_t src_at = n == 1000 ? 3 : 0, dst_at = n == 1000 ? 5 : 0, pad = n == 1000 ? 10 : 0;
    h_.check("copy_to_host", dims({n}) + (pad ? " src+3 -> dst+5" : ""), [&](OpCase& c) {
      auto& src = c.input(Shape{n + src_at}, -1.0f, 1.0f);
      std::vector<uint32_t> on_cpu(static_cast<size_t>(n + pad), OpCase::kPoison), on_device = on_cpu;
      c.run([&](Backend& b, Side s) {
        auto& dst = s == Side::Cpu ? on_cpu : on_device;
        b.copy_to_host(dst.data() + dst_at, src.f(s) + src_at, static_cast<size_t>(n) * sizeof(float));
      });
      c.expect_words("", std::move(on_device), std::move(on_cpu));
    });
  }
  h_.check("copy", dims({1500007}), [&](OpCase& c) {
    auto& src = c.input(Shape{1500007}, -1.0f, 1.0f);
    auto& dst = c.poisoned(Shape{1500007});
    c.run([&](Backend& b, Side s) { b.copy(dst.f(s), src.f(s), 1500007 * sizeof(float)); });
    c.expect("", dst, kExact, Rule::Bits);
  });
  h_.check("copy", "1000 of 1020, src+7 -> dst+13", [&](OpCase& c) {
    auto& src = c.input(Shape{1020}, -1.0f, 1.0f);
    auto& dst = c.input(Shape{1020}, 2.0f, 3.0f);
    c.run([&](Backend& b, Side s) { b.copy(dst.f(s) + 13, src.f(s) + 7, 1000 * sizeof(float)); });
    c.expect("", dst, kExact, Rule::Bits);
  });
  h_.check("fill32", dims({1500007}) + " 1.0f", [&](OpCase& c) {
    auto& dst = c.poisoned(Shape{1500007});
    c.run([&](Backend& b, Side s) { b.fill32(dst.f(s), 1500007, 0x3f800000u); });
    c.expect("", dst, kExact, Rule::Bits);
  });
  // A range inside a buffer (the neighbours must keep their values), and n = 0.
  for (int64_t n : {int64_t{1001}, int64_t{0}}) {
    h_.check("fill32", std::to_string(n) + " of 1010 at +3, 0xdeadbeef", [&](OpCase& c) {
      auto& dst = c.input(Shape{1010}, -1.0f, 1.0f);
      c.run([&](Backend& b, Side s) { b.fill32(dst.f(s) + 3, n, 0xdeadbeefu); });
      c.expect("", dst, kExact, Rule::Bits);
    });
  }
}

// ---- optimizers ---------------------------------------------------------------

void BackendComparison::optimizers() {
  struct Sgd {
    int64_t n;
    float momentum;
    bool nesterov;
  };
  for (const Sgd& p : {Sgd{1000003, 0.0f, false}, Sgd{37, 0.0f, false}, Sgd{1000003, 0.9f, false},
                       Sgd{37, 0.9f, false}, Sgd{1000003, 0.9f, true}, Sgd{37, 0.9f, true}}) {
    const std::string variant = p.momentum == 0.0f ? "plain" : p.nesterov ? "nesterov 0.9" : "momentum 0.9";
    h_.check("sgd_update", dims({p.n}) + " " + variant, [&](OpCase& c) {
      auto& w = c.input(Shape{p.n}, -1.0f, 1.0f);
      auto& g = c.input(Shape{p.n}, -1.0f, 1.0f);
      auto& lr = c.values(Shape{1}, {0.01f});
      // Plain SGD passes no velocity at all (the optimizer has none).
      Operand none;
      auto& velocity = p.momentum == 0.0f ? none : c.input(Shape{p.n}, -0.01f, 0.01f);
      c.run([&](Backend& b, Side s) {
        b.sgd_update(p.n, w.f(s), g.f(s), velocity.f(s), lr.f(s), p.momentum, p.nesterov, WeightStores::Cached);
      });
      c.expect("w", w, kElementwise);
      if (p.momentum != 0.0f) c.expect("velocity", velocity, kElementwise);
    });
  }
  // Step 1 (the largest bias correction) and a later step.
  for (auto [n, step] : {std::pair<int64_t, float>{1000003, 3.0f}, std::pair<int64_t, float>{37, 1.0f}}) {
    h_.check("adam_update", dims({n}) + " step " + num(step), [&](OpCase& c) {
      auto& w = c.input(Shape{n}, -1.0f, 1.0f);
      auto& g = c.input(Shape{n}, -1.0f, 1.0f);
      auto& m = c.input(Shape{n}, -0.1f, 0.1f);
      auto& v = c.input(Shape{n}, 0.0f, 0.01f);
      auto& lr_step = c.values(Shape{2}, {1e-3f, step});
      const AdamParams params{0.9f, 0.999f, 1e-7f};
      c.run([&](Backend& b, Side s) {
        b.adam_update(n, w.f(s), g.f(s), m.f(s), v.f(s), params, lr_step.f(s), WeightStores::Cached);
      });
      c.expect("w", w, kElementwise);
      c.expect("m", m, kElementwise);
      c.expect("v", v, kElementwise);
    });
  }
  // Thirty tensors (more than one launch holds on a GPU), one of them empty,
  // laid one after another in each buffer: the same values as one call each.
  std::vector<int64_t> sizes{1000003, 0, 37, 1};
  for (int64_t i = 0; i < 26; ++i) sizes.push_back(i * 131 % 977 + 1);
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  h_.check("adam_update_many", std::to_string(sizes.size()) + " tensors, " + std::to_string(total) + " weights, step 2",
           [&](OpCase& c) {
             auto& w = c.input(Shape{total}, -1.0f, 1.0f);
             auto& g = c.input(Shape{total}, -1.0f, 1.0f);
             auto& m = c.input(Shape{total}, -0.1f, 0.1f);
             auto& v = c.input(Shape{total}, 0.0f, 0.01f);
             auto& lr_step = c.values(Shape{2}, {1e-3f, 2.0f});
             const AdamParams params{0.9f, 0.999f, 1e-7f};
             c.run([&](Backend& b, Side s) {
               std::vector<AdamTensor> tensors;
               int64_t at = 0;
               for (int64_t n : sizes) {
                 tensors.push_back({n, w.f(s) + at, g.f(s) + at, m.f(s) + at, v.f(s) + at});
                 at += n;
               }
               b.adam_update_many(tensors, params, lr_step.f(s), WeightStores::Cached);
             });
             c.expect("w", w, kElementwise);
             c.expect("m", m, kElementwise);
             c.expect("v", v, kElementwise);
           });
}

}  // namespace strata::gpu_check
