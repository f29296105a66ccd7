// The kernels of a training step's edges (CudaKernels.cu) on the emulated
// GPU against the CPU backend, on the GPU check's tolerances: the loss of a
// batch by both of sparse_softmax_xent_average's paths (one block up to 256
// rows and 32768 logits, three kernels above), the step's statistics and
// label checks (one block of 1024 threads, rows below and above it), the
// batch's gathering, and adam_update_many over more tensors than one launch
// takes (24).
#include "TestStepKernels.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "Comparison.h"
#include "backend/Backend.h"
#include "backend/cuda/CudaKernels.h"

using namespace strata;
using namespace emutest;

void TestStepKernels::sparse_softmax_xent_average() {
  struct Case {
    int64_t rows, cols;
    bool error, bad_labels;
  };
  // 64x1000 and 300x10 take the three-kernel path (too many logits, too
  // many rows); the others the one-block kernel, 256x128 at both its limits.
  for (const Case& p :
       {Case{64, 1000, true, true}, Case{300, 10, true, true}, Case{300, 10, false, false}, Case{256, 10, true, true},
        Case{256, 128, true, false}, Case{1, 10, true, false}, Case{0, 10, true, false}, Case{1, 10, true, true},
        Case{7, 3, false, false}, Case{33, 1, true, false}}) {
    const std::string what = "sparse_softmax_xent_average " + shape(p.rows, p.cols) + (p.error ? " error" : "") +
                             (p.bad_labels ? " bad labels" : "");
    const auto logits = uniform(p.rows * p.cols, -3.0f, 3.0f);
    auto labels = labels_in(p.rows, p.cols);
    if (p.bad_labels) {
      labels[static_cast<size_t>(p.rows / 2)] = static_cast<int32_t>(p.cols);  // one past the last class
      labels.back() = -1;
    }
    const std::vector<float> scale{1.0f / static_cast<float>(p.rows)};
    // The flag already holds a count from an earlier step: it adds on.
    std::vector<float> error{p.bad_labels ? 0.0f : 2.0f, p.bad_labels ? 0.0f : 7.0f}, cpu_error = error;
    auto loss = poisoned(p.rows), dlogits = poisoned(p.rows * p.cols), total = poisoned(1);
    auto cpu_loss = loss, cpu_dlogits = dlogits, cpu_total = total;
    cuda_emu::sparse_softmax_xent_average(kStream, logits.data(), labels.data(), p.rows, p.cols, scale.data(),
                                          p.error ? error.data() : nullptr, loss.data(), dlogits.data(), total.data());
    cpu_backend().sparse_softmax_xent_average(logits.data(), labels.data(), p.rows, p.cols, scale.data(),
                                              p.error ? cpu_error.data() : nullptr, cpu_loss.data(), cpu_dlogits.data(),
                                              cpu_total.data());
    EMU_EXPECT(close(loss, cpu_loss, summed(p.cols), "loss"), what);
    EMU_EXPECT(close(dlogits, cpu_dlogits, kElementwise, "dlogits"), what);
    EMU_EXPECT(close(total, cpu_total, summed(p.rows), "total"), what);
    EMU_EXPECT(close(error, cpu_error, kExact, "error"), what);
    EMU_EXPECT_CLEAN(what);
  }
}

void TestStepKernels::gather_step_stats() {
  // Rows above the block's 1024 threads make each thread count several.
  for (int64_t rows : {0, 1, 37, 1500})
    for (bool with_labels : {true, false})
      for (bool with_error : {true, false}) {
        const std::string what = "gather_step_stats " + shape(rows, 10) + (with_labels ? " labels" : "") +
                                 (with_error ? " error" : "");
        const auto logits = quantized(rows * 10);
        const auto labels = labels_in(rows, 10);
        const std::vector<float> loss{1.25f};
        std::vector<float> error{3.0f, -2.0f}, cpu_error = error;
        auto stats = poisoned(4), cpu_stats = stats;
        cuda_emu::gather_step_stats(kStream, loss.data(), logits.data(), with_labels ? labels.data() : nullptr, rows, 10,
                                    with_error ? error.data() : nullptr, stats.data());
        cpu_backend().gather_step_stats(loss.data(), logits.data(), with_labels ? labels.data() : nullptr, rows, 10,
                                        with_error ? cpu_error.data() : nullptr, cpu_stats.data());
        EMU_EXPECT(close(stats, cpu_stats, kExact, "stats"), what);
        EMU_EXPECT(close(error, cpu_error, kExact, "error after"), what);
        EMU_EXPECT_CLEAN(what);
      }
}

void TestStepKernels::count_correct() {
  for (int64_t rows : {1, 37, 2000})
    for (int64_t cols : {1, 10}) {
      const std::string what = "count_correct " + shape(rows, cols);
      const auto predictions = quantized(rows * cols);
      const auto labels = labels_in(rows, cols);
      std::vector<float> count{5.0f}, cpu_count = count;
      cuda_emu::count_correct(kStream, predictions.data(), labels.data(), rows, cols, count.data());
      cpu_backend().count_correct(predictions.data(), labels.data(), rows, cols, cpu_count.data());
      EMU_EXPECT(close(count, cpu_count, kExact, "count"), what);
      EMU_EXPECT_CLEAN(what);
    }
}

void TestStepKernels::check_labels() {
  for (int64_t n : {1, 100, 3000})
    for (int bad : {0, 1, 5}) {
      const std::string what = "check_labels n " + std::to_string(n) + " bad " + std::to_string(bad);
      std::vector<float> error{0.0f, 0.0f}, cpu_error = error;
      // Twice: the count adds up, the first bad label seen stays.
      for (int call = 0; call < 2; ++call) {
        auto labels = labels_in(n, 10);
        for (int k = 0; k < bad; ++k) labels[static_cast<size_t>(below(n))] = k % 2 ? -3 - k : 10 + k;
        cuda_emu::check_labels(kStream, labels.data(), n, 10, error.data());
        cpu_backend().check_labels(labels.data(), n, 10, cpu_error.data());
        EMU_EXPECT(close(error, cpu_error, kExact, "error"), what + " call " + std::to_string(call));
      }
      EMU_EXPECT_CLEAN(what);
    }
}

void TestStepKernels::gather_examples() {
  struct Case {
    int64_t row_bytes;
    bool normalise, aligned;
  };
  // 784 and 12 bytes take the four-pixel path where the features are
  // 16-byte aligned; 5 bytes, or features one float off, the one-pixel
  // path; 0 bytes gathers the labels only.
  for (const Case& p : {Case{784, true, true}, Case{784, false, true}, Case{12, true, false}, Case{5, true, true},
                        Case{5, false, true}, Case{0, false, true}}) {
    const std::string what = "gather_examples " + std::to_string(p.row_bytes) + " bytes" +
                             (p.normalise ? " mean/inv_std" : "") + (p.aligned ? "" : " features unaligned");
    const int64_t table_rows = 100, n = 37;
    std::vector<uint8_t> pixels(static_cast<size_t>(table_rows * p.row_bytes));
    for (auto& v : pixels) v = static_cast<uint8_t>(below(256));
    const auto labels = labels_in(table_rows, 10);
    const auto rows = labels_in(n, table_rows);
    const auto mean = uniform(p.row_bytes, 0.2f, 0.5f), inv_std = uniform(p.row_bytes, 2.0f, 4.0f);
    // malloc's 16-byte alignment; one float further is off it.
    auto features = poisoned(n * p.row_bytes + 1), cpu_features = features;
    float* out = features.data() + (p.aligned ? 0 : 1);
    std::vector<int32_t> got_labels(static_cast<size_t>(n), -7), cpu_labels = got_labels;
    cuda_emu::gather_examples(kStream, pixels.data(), p.row_bytes, labels.data(), rows.data(), n, 1.0f / 255.0f,
                              p.normalise ? mean.data() : nullptr, p.normalise ? inv_std.data() : nullptr, out,
                              got_labels.data());
    cpu_backend().gather_examples(pixels.data(), p.row_bytes, labels.data(), rows.data(), n, 1.0f / 255.0f,
                                  p.normalise ? mean.data() : nullptr, p.normalise ? inv_std.data() : nullptr,
                                  cpu_features.data() + (p.aligned ? 0 : 1), cpu_labels.data());
    EMU_EXPECT(close(features, cpu_features, kElementwise, "features"), what);
    EMU_EXPECT(close(got_labels, cpu_labels, kExact, "labels"), what);
    EMU_EXPECT_CLEAN(what);
  }
}

void TestStepKernels::adam_update_many() {
  // 53 tensors: three launches (24 + 24 + 5), odd sizes, empty ones among them.
  const int64_t sizes[] = {1, 7, 255, 256, 257, 0, 1000, 3, 33};
  struct Tensor {
    std::vector<float> w, g, m, v;
  };
  std::vector<Tensor> gpu, cpu;
  for (int k = 0; k < 53; ++k) {
    const int64_t n = sizes[k % 9];
    gpu.push_back({uniform(n, -1.0f, 1.0f), uniform(n, -1.0f, 1.0f), uniform(n, -0.1f, 0.1f), uniform(n, 0.0f, 0.01f)});
  }
  cpu = gpu;
  const auto view = [](std::vector<Tensor>& ts) {
    std::vector<AdamTensor> v;
    for (auto& t : ts) v.push_back({static_cast<int64_t>(t.w.size()), t.w.data(), t.g.data(), t.m.data(), t.v.data()});
    return v;
  };
  const auto gpu_view = view(gpu), cpu_view = view(cpu);
  const AdamParams params{0.9f, 0.999f, 1e-7f};
  const std::vector<float> lr_step{1e-3f, 3.0f};
  const int64_t before = emu::launches();
  cuda_emu::adam_update_many(kStream, gpu_view, params, lr_step.data());
  QCOMPARE(emu::launches() - before, int64_t{3});
  cpu_backend().adam_update_many(cpu_view, params, lr_step.data(), WeightStores::Cached);
  for (size_t k = 0; k < gpu.size(); ++k) {
    const std::string what = "adam_update_many tensor " + std::to_string(k) + " of " + std::to_string(gpu[k].w.size());
    EMU_EXPECT(close(gpu[k].w, cpu[k].w, kElementwise, "w"), what);
    EMU_EXPECT(close(gpu[k].m, cpu[k].m, kElementwise, "m"), what);
    EMU_EXPECT(close(gpu[k].v, cpu[k].v, kElementwise, "v"), what);
  }
  EMU_EXPECT_CLEAN(std::string("adam_update_many"));
}
