// The GPU check's op comparison (tools/gpu_check): on the simulated
// accelerator every Backend operation matches the CPU backend, every op of
// the interface is covered, and the harness does catch wrong results, NaN
// left in poisoned outputs and engine errors, one check at a time.
#include <QtTest/QtTest>

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "BackendComparison.h"
#include "FaultyBackend.h"
#include "MarkdownReport.h"
#include "OpHarness.h"
#include "ResultComparison.h"
#include "TestUtil.h"
#include "core/Error.h"

using namespace strata;
using namespace strata::gpu_check;

namespace {
const Device kSim{DeviceKind::Sim, 0};
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::string text(const CheckRecord& r) { return r.op + " [" + r.shape + "]: " + r.detail; }

// Every record whose op is `op`: their shape descriptions joined, to look for variants.
std::string shapes_of(const std::vector<CheckRecord>& records, const std::string& op) {
  std::string s;
  for (const auto& r : records)
    if (r.op == op) s += r.shape + "\n";
  return s;
}
}  // namespace

class TestBackendComparison : public QObject {
  Q_OBJECT

private slots:
  void every_op_on_sim_matches_the_cpu() {
    QElapsedTimer timer;
    timer.start();
    const auto records = BackendComparison(kSim, testutil::process_seed()).run();
    qInfo("%zu checks in %lld ms (STRATA_TEST_SEED=%llu)", records.size(), static_cast<long long>(timer.elapsed()),
          static_cast<unsigned long long>(testutil::process_seed()));
    for (const auto& r : records) {
      QVERIFY2(r.passed, text(r).c_str());
      QVERIFY2(r.max_error <= r.tolerance, text(r).c_str());
    }

    // Every operation of Backend (and DeviceMemory's copies and fill) is checked.
    const std::set<std::string> expected{"copy_from_host",
                                         "copy_to_host",
                                         "copy",
                                         "fill32",
                                         "gemm",
                                         "gemm_bias",
                                         "add_bias_rows",
                                         "sum_rows",
                                         "activation_forward",
                                         "activation_backward",
                                         "bias_activation",
                                         "bias_activation_backward",
                                         "sparse_softmax_xent",
                                         "sparse_softmax_xent_average",
                                         "softmax_xent",
                                         "axpby",
                                         "dropout",
                                         "mul",
                                         "scale_rows",
                                         "log_clamp",
                                         "log_clamp_backward",
                                         "pixels_to_float",
                                         "gather_rows",
                                         "gather_examples",
                                         "scaled_sum",
                                         "broadcast_scaled",
                                         "add_scalar",
                                         "increment",
                                         "argmax_rows",
                                         "count_correct",
                                         "gather_step_stats",
                                         "check_labels",
                                         "im2col",
                                         "col2im",
                                         "conv2d",
                                         "conv2d_backward_data",
                                         "conv2d_backward_filter",
                                         "conv2d_keeping_patches",
                                         "max_pool",
                                         "max_pool_bias_relu",
                                         "max_pool_backward",
                                         "avg_pool",
                                         "avg_pool_backward",
                                         "channel_sums",
                                         "batch_norm_stats",
                                         "batch_norm_inference_stats",
                                         "batch_norm_moving_update",
                                         "batch_norm_apply",
                                         "batch_norm_apply_relu",
                                         "batch_norm_relu_backward_reduce",
                                         "batch_norm_relu_backward_apply",
                                         "batch_norm_backward_reduce",
                                         "batch_norm_backward_apply",
                                         "sgd_update",
                                         "adam_update",
                                         "adam_update_many"};
    std::set<std::string> ops;
    for (const auto& r : records) ops.insert(r.op);
    for (const auto& op : expected) QVERIFY2(ops.count(op), ("no check of " + op).c_str());
    for (const auto& op : ops) QVERIFY2(expected.count(op), ("unexpected op name " + op).c_str());

    // The variants the interface's contracts single out.
    const std::map<std::string, std::vector<std::string>> variants{
        {"gemm", {"NN", "NT", "TN", "TT", "k=0", "beta=0", "beta=1"}},
        {"gemm_bias", {"NN", "TT", "k=0"}},
        {"sum_rows", {"accumulate", "overwrite", "0x37"}},
        {"activation_forward", {"none", "relu", "tanh", "sigmoid", "softmax", "in place"}},
        {"bias_activation_backward", {"none", "relu", "tanh", "sigmoid", "softmax", "relu 0x37", "200704x32", "-> dbias2"}},
        {"sparse_softmax_xent_average", {"256x10", "257x10", "64x1000", "no flag", "flag already set", "0x10"}},
        {"activation_backward", {"none", "relu", "tanh", "sigmoid", "softmax"}},
        {"bias_activation", {"relu", "tanh", "sigmoid", "softmax"}},
        {"sparse_softmax_xent", {"dlogits=null", "labels -1", "-> dlogits"}},
        {"softmax_xent", {"dlogits=null", "unnormalised"}},
        {"axpby", {"beta=0", "beta=0.5"}},
        {"dropout", {"-> mask", "-> y"}},
        {"pixels_to_float", {"mean/inv_std", "scale only"}},
        {"gather_rows", {"of 784 bytes", "of 4 bytes", "of 3 bytes"}},
        {"gather_examples", {"of 784 bytes mean/inv_std", "of 784 bytes scale only", "of 3 bytes"}},
        {"argmax_rows", {"ties", "equal", "x1 "}},
        {"check_labels", {"none bad", "flag already set"}},
        {"max_pool", {"ties", "negative", "pad 1,1", "-> argmax", "k2x2 s2x2 pad 0,0"}},
        {"max_pool_bias_relu", {"ties", "negative", "pad 1,1", "-> argmax", "k2x2 s2x2 pad 0,0"}},
        {"conv2d", {"via im2col-slices", "via im2col"}},
        {"conv2d_keeping_patches", {"via im2col-slices", "via im2col"}},
        {"batch_norm_stats", {"count 0", "count 1000"}},
        {"batch_norm_moving_update", {"count 0", "count 128"}},
        {"channel_sums", {"4099x3", "2049x16", "0x32"}},
        {"batch_norm_apply", {"gamma=null beta=null", "gamma beta", "2049x16 gamma=null beta"}},
        {"batch_norm_apply_relu", {"gamma=null beta=null", "gamma beta"}},
        {"batch_norm_backward_apply", {"gamma=null"}},
        {"batch_norm_relu_backward_reduce", {"gamma=null beta=null", "gamma beta"}},
        {"batch_norm_relu_backward_apply", {"gamma=null beta=null", "gamma beta", "4099x3", "2049x16"}},
        {"sgd_update", {"plain", "momentum", "nesterov"}},
        {"adam_update", {"step 1", "step 3"}},
        {"fill32", {"0 of"}},
    };
    for (const auto& [op, needles] : variants) {
      const std::string shapes = shapes_of(records, op);
      for (const auto& needle : needles)
        QVERIFY2(shapes.find(needle) != std::string::npos, (op + " has no check of '" + needle + "'").c_str());
    }
    QVERIFY(records.size() >= 150);
  }

  // The whole section against a sim backend with deliberate bugs: exactly
  // the checks of the broken contracts fail, with the rest still running.
  void the_ops_section_catches_faulty_kernels() {
    FaultyBackend faulty(backend_for(kSim), {"gemm_skips_empty_product", "sum_rows_overwrites", "sigmoid_is_tanh",
                                             "dropout_counter_off_by_one", "argmax_misses_last_row",
                                             "check_labels_off_by_one", "sgd_ignores_nesterov", "adam_beta2_rounded"});
    const auto records = BackendComparison(kSim, testutil::process_seed(), {}, &faulty).run();
    auto should_fail = [](const CheckRecord& r) {
      auto has = [&](const char* s) { return r.shape.find(s) != std::string::npos; };
      if (r.op == "gemm") return has("k=0") && has("beta=0");  // C left NaN instead of 0
      if (r.op == "gemm_bias") return has("k=0");              // through the same gemm: NaN + bias
      if (r.op == "sum_rows") return has("accumulate");
      // bias_activation's default calls activation_forward: the fault shows there too.
      if (r.op == "activation_forward" || r.op == "bias_activation") return has("sigmoid");
      if (r.op == "dropout") return !has("rate=0 ");  // keeping everything draws no numbers
      if (r.op == "argmax_rows" || r.op == "check_labels") return true;
      // Its default checks the labels through check_labels (no rows: nothing to misjudge).
      if (r.op == "sparse_softmax_xent_average") return has("-> error") && !has("0x10 ");
      if (r.op == "sgd_update") return has("nesterov") && has("-> w");
      // beta2 touches v and w only; adam_update_many's default calls adam_update.
      if (r.op == "adam_update" || r.op == "adam_update_many") return !has("-> m");
      return false;
    };
    int failed = 0;
    for (const auto& r : records) {
      QVERIFY2(r.passed != should_fail(r), (std::string(r.passed ? "missed: " : "unexpected failure: ") + text(r)).c_str());
      failed += !r.passed;
    }
    QVERIFY(failed >= 20);
  }

  // A convolution way a shape offers in some directions only (cuDNN without
  // an algorithm for its kernel gradient) is forced in those directions and
  // checked there; one that refuses a direction it is offered for fails
  // that direction's checks, since im2col's output would pass in its place.
  void convolution_ways_are_checked_in_the_directions_they_offer() {
    const auto via_partial = [](const std::vector<CheckRecord>& records, const std::string& op) {
      std::vector<CheckRecord> found;
      for (const auto& r : records)
        if (r.op == op && r.shape.find("via partial") != std::string::npos) found.push_back(r);
      return found;
    };
    FaultyBackend partial(backend_for(kSim), {"partial_way"});
    const auto records = BackendComparison(kSim, testutil::process_seed(), {}, &partial).run();
    for (const auto& r : records) QVERIFY2(r.passed, text(r).c_str());
    QVERIFY(!via_partial(records, "conv2d").empty());
    QVERIFY(!via_partial(records, "conv2d_backward_data").empty());
    QVERIFY(via_partial(records, "conv2d_backward_filter").empty());
    QVERIFY(via_partial(records, "conv2d_keeping_patches").empty());

    FaultyBackend refusing(backend_for(kSim), {"partial_way_refuses"});
    const auto refused = BackendComparison(kSim, testutil::process_seed(), {}, &refusing).run();
    int failed = 0;
    for (const auto& r : refused) {
      const bool via_partial_way = r.shape.find("via partial") != std::string::npos;
      // The fake forwards conv2d_keeping_patches to sim, whose patches are
      // its own: what that case finds says nothing of this rule.
      if (via_partial_way && r.op == "conv2d_keeping_patches") continue;
      const bool kernel_gradient = via_partial_way && r.op == "conv2d_backward_filter" &&
                                   r.shape.find("calls the forced way refused") != std::string::npos;
      QVERIFY2(r.passed != kernel_gradient, (std::string(r.passed ? "missed: " : "unexpected failure: ") + text(r)).c_str());
      failed += !r.passed;
    }
    QVERIFY(failed >= 4);
  }

  // The comparison rules on deliberately wrong device results.
  void compare_floats_catches_poison_and_drift() {
    const std::vector<float> cpu{0.25f, -3.0f, 0.5f, 1000.0f};
    auto same = compare_floats(cpu, cpu, 0.0);
    QVERIFY(same.passed);
    QCOMPARE(same.max_error, 0.0);
    QVERIFY(same.detail.empty());

    // An element the kernel never wrote keeps the poison: fails at any tolerance.
    auto poisoned = compare_floats(std::vector<float>{0.25f, -3.0f, kNaN, 1000.0f}, cpu, 1e9);
    QVERIFY(!poisoned.passed);
    QVERIFY(std::isinf(poisoned.max_error));
    QVERIFY2(poisoned.detail.find("[2]") != std::string::npos, poisoned.detail.c_str());
    QVERIFY2(poisoned.detail.find("nan") != std::string::npos || poisoned.detail.find("NaN") != std::string::npos,
             poisoned.detail.c_str());

    // Off by 1e-2 below 1: an absolute error of 1e-2.
    auto drift = compare_floats(std::vector<float>{0.25f, -3.0f, 0.51f, 1000.0f}, cpu, 1e-5);
    QVERIFY(!drift.passed);
    QVERIFY(std::fabs(drift.max_error - 1e-2) < 1e-6);
    QVERIFY2(drift.detail.find("1 of 4") != std::string::npos && drift.detail.find("[2]") != std::string::npos,
             drift.detail.c_str());
    QVERIFY(compare_floats(std::vector<float>{0.25f, -3.0f, 0.51f, 1000.0f}, cpu, 2e-2).passed);

    // Above 1 the error is relative: 1000.005 against 1000 is 5e-6.
    auto relative = compare_floats(std::vector<float>{0.25f, -3.0f, 0.5f, 1000.005f}, cpu, 1e-5);
    QVERIFY2(relative.passed, relative.detail.c_str());
    QVERIFY(relative.max_error > 4e-6 && relative.max_error < 6e-6);

    // NaN matches only NaN; infinities must be equal; sizes must agree.
    QVERIFY(compare_floats(std::vector<float>{kNaN}, std::vector<float>{kNaN}, 0).passed);
    QVERIFY(!compare_floats(std::vector<float>{1.0f}, std::vector<float>{kNaN}, 1e9).passed);
    const float inf = std::numeric_limits<float>::infinity();
    QVERIFY(compare_floats(std::vector<float>{-inf}, std::vector<float>{-inf}, 0).passed);
    QVERIFY(!compare_floats(std::vector<float>{3e38f}, std::vector<float>{inf}, 1e9).passed);
    QVERIFY(!compare_floats(std::vector<float>{1.0f}, std::vector<float>{1.0f, 2.0f}, 1e9).passed);
    // "Exact" is equal values: zeros of either sign are equal, unlike their bits.
    QVERIFY(compare_floats(std::vector<float>{-0.0f}, std::vector<float>{0.0f}, 0).passed);
    QVERIFY(!compare_bits(std::vector<uint32_t>{0x80000000u}, std::vector<uint32_t>{0u}).passed);
  }

  void compare_ints_is_exact() {
    QVERIFY(compare_ints(std::vector<int32_t>{1, 2, 3}, std::vector<int32_t>{1, 2, 3}).passed);
    auto off = compare_ints(std::vector<int32_t>{1, 0x7fc00000, 3}, std::vector<int32_t>{1, 2, 3});
    QVERIFY(!off.passed);
    QVERIFY2(off.detail.find("[1]") != std::string::npos && off.detail.find("poison") != std::string::npos,
             off.detail.c_str());
  }

  // End to end through the harness: a device that computes something else,
  // one that leaves its output unwritten, and engine errors, each reported
  // as its own failed record while the checks after it still run.
  void harness_reports_each_failure_and_goes_on() {
    std::vector<CheckRecord> seen;
    OpHarness h(kSim, 1, [&](const CheckRecord& r) { seen.push_back(r); });
    const int64_t n = 1000;
    h.check("axpby", "wrong alpha on the device", [&](OpCase& c) {
      auto& x = c.input(Shape{n}, -1.0f, 1.0f);
      auto& y = c.poisoned(Shape{n});
      c.run([&](Backend& b, Side s) { b.axpby(n, s == Side::Cpu ? 1.0f : 1.01f, x.f(s), 0.0f, y.f(s)); });
      c.expect("", y, 1e-5);
    });
    h.check("axpby", "device never runs", [&](OpCase& c) {
      auto& x = c.input(Shape{n}, -1.0f, 1.0f);
      auto& y = c.poisoned(Shape{n});
      c.run([&](Backend& b, Side s) {
        if (s == Side::Cpu) b.axpby(n, 1.0f, x.f(s), 0.0f, y.f(s));
      });
      c.expect("", y, 1e9);
    });
    h.check("add_scalar", "host pointer given to the device", [&](OpCase& c) {
      auto& x = c.input(Shape{n}, -1.0f, 1.0f);
      c.run([&](Backend& b, Side) { b.add_scalar(n, 1.0f, x.f(Side::Cpu)); });
      c.expect("", x, 1e-5);
    });
    h.check("thrown", "", [&](OpCase&) { throw runtime_error("kernel launch failed: too many resources"); });
    h.check("axpby", "correct", [&](OpCase& c) {
      auto& x = c.input(Shape{n}, -1.0f, 1.0f);
      auto& y = c.poisoned(Shape{n});
      c.run([&](Backend& b, Side s) { b.axpby(n, 2.0f, x.f(s), 0.0f, y.f(s)); });
      c.expect("", y, 1e-5);
    });

    QCOMPARE(seen.size(), size_t{5});
    QCOMPARE(h.records().size(), size_t{5});
    QVERIFY(!seen[0].passed);
    QVERIFY2(seen[0].max_error > 1e-4 && seen[0].max_error < 1.1e-2, text(seen[0]).c_str());
    QVERIFY(!seen[1].passed);
    QVERIFY2(seen[1].detail.find("poison") != std::string::npos, text(seen[1]).c_str());
    QVERIFY(!seen[2].passed);
    QVERIFY2(seen[2].detail.find("host pointer") != std::string::npos, text(seen[2]).c_str());
    QVERIFY(!seen[3].passed);
    QVERIFY2(seen[3].detail.find("too many resources") != std::string::npos, text(seen[3]).c_str());
    QVERIFY2(seen[4].passed, text(seen[4]).c_str());
  }

  // The report is rewritten after each section: one written mid-run names the
  // sections that have not run, so a run killed there says so; the final one
  // does not.
  void a_report_cut_short_names_the_sections_that_never_ran() {
    const ReportHeader header{"2026-12-03 10:00:00 UTC", "sim:0", "simulated", 7, "strata-gpu-check --device sim:0"};
    SectionResult ops{"ops", "every op", {CheckRecord{"gemm", "2x3", 0, 1e-5, true, ""}}, 1.5, ""};
    const std::string partial = render_markdown_report(header, {ops}, {"training", "mnist"});
    QVERIFY2(partial.find("stopped before these sections: training, mnist") != std::string::npos, partial.c_str());
    QVERIFY2(partial.find("All 1 checks passed.") != std::string::npos, partial.c_str());
    const std::string final_report = render_markdown_report(header, {ops});
    QVERIFY2(final_report.find("stopped before") == std::string::npos, final_report.c_str());
  }

  void the_host_is_not_a_device_under_test() {
    STRATA_EXPECT_ERROR(BackendComparison(Device{}, 1), ErrorKind::BadInput, "cpu:0");
  }
};

QTEST_GUILESS_MAIN(TestBackendComparison)
#include "test_backend_comparison.moc"
