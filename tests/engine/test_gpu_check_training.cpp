// The GPU check's training, errors and multi-device sections
// (tools/gpu_check), run on the simulated accelerator: a step and 50 SGD
// steps against the CPU, graph replay against op-by-op, mirrored x2 and x4 on
// one device; a device that does not exist and memory exhausted; mirrored,
// mixed placement and synchronised batch norm across sim:0 and sim:1 with the
// all-reduce bandwidth. On sim every comparison must pass (it runs the CPU's
// kernels), which checks the harness and the engine's device paths (step
// graphs, replicas sharing a device, replicas on two devices) before a GPU
// ever runs them. On a machine with a GPU the ops and training sections run
// on gpu:0 too.
#include <QtTest/QtTest>

#include <cstdlib>
#include <set>
#include <tuple>

#include "BenchSection.h"
#include "ConvolutionChoices.h"
#include "ErrorsSection.h"
#include "FailuresSection.h"
#include "MultiDeviceSection.h"
#include "OpsSection.h"
#include "Sections.h"
#include "TrainingChecks.h"
#include "TrainingSection.h"
#include "core/Device.h"

using namespace strata;
using namespace strata::gpu_check;

class TestGpuCheckTraining : public QObject {
  Q_OBJECT

private slots:
  void training_section_passes_on_sim() {
    TrainingSection section;
    std::set<std::string> ops;
    const auto records = section.run({Device{DeviceKind::Sim, 0}, 1, {}, {}});
    for (const auto& r : records) {
      QVERIFY2(r.passed, (r.op + " " + r.shape + ": " + r.detail).c_str());
      ops.insert(r.op);
    }
    QCOMPARE(ops, (std::set<std::string>{"train_step", "sgd_trajectory", "graph_replay", "gradient_branches", "mirrored_x2",
                                         "mirrored_x4_shared", "sharded_update", "parameter_server", "device_timeline"}));
    QVERIFY(records.size() > 20);  // every variable of every comparison has its own record
  }

  void errors_section_passes_on_sim() {
    // sim:8 does not exist; sim:0 refuses more than its 16 GiB and then
    // still computes.
    ErrorsSection section;
    const auto records = section.run({Device{DeviceKind::Sim, 0}, 1, {}, {}});
    QCOMPARE(records.size(), size_t{4});
    for (const auto& r : records) QVERIFY2(r.passed, (r.shape + ": " + r.detail).c_str());
    QVERIFY2(records[0].detail.find("sim:0 to sim:7") != std::string::npos, records[0].detail.c_str());
  }

  void failures_section_passes_on_sim() {
    // A replica failing beside captured step graphs fails the run naming
    // it, and the device trains the next run.
    // Step graphs off for the process do not turn the case into one
    // without them: it captures whatever the environment says.
    qputenv("STRATA_STEP_GRAPHS", "0");
    FailuresSection section;
    size_t announced = 0;
    const auto records = section.run({Device{DeviceKind::Sim, 0}, 1, [&](const CheckRecord&) { ++announced; }, {}});
    qunsetenv("STRATA_STEP_GRAPHS");
    QCOMPARE(records.size(), size_t{2});
    // Each record reported as it came (a later hang would not take it).
    QCOMPARE(announced, size_t{2});
    for (const auto& r : records) QVERIFY2(r.passed, (r.shape + ": " + r.detail).c_str());
    QVERIFY2(records[0].detail.find("replica 1 (sim:0) failed (injected at step 8)") != std::string::npos,
             records[0].detail.c_str());
    // Last of all: a run it leaves hanging would hold the device for the rest.
    QCOMPARE(all_sections().back()->name(), std::string("failures"));
  }

  void second_process_tables_refuse_the_wrong_process() {
    // The TF32 and non-deterministic tables measure what the environment
    // chose for the whole process: started without it, each says so and
    // fails rather than measuring the defaults under its title.
    if (std::getenv("STRATA_TF32") || std::getenv("STRATA_DETERMINISTIC")) QSKIP("the environment sets the choice");
    const SectionContext sim{Device{DeviceKind::Sim, 0}, 1, {}, {}};
    for (auto [variant, name, setting] :
         {std::tuple{BenchSection::Variant::Tf32, "bench-tf32", "STRATA_TF32=1"},
          std::tuple{BenchSection::Variant::NonDeterministic, "bench-nondet", "STRATA_DETERMINISTIC=0"}}) {
      BenchSection section(variant);
      QCOMPARE(section.name(), std::string(name));
      QVERIFY(!section.by_default());
      const auto records = section.run(sim);
      QCOMPARE(records.size(), size_t{1});
      QVERIFY(!records[0].passed);
      QVERIFY2(records[0].detail.find(setting) != std::string::npos, records[0].detail.c_str());
      QVERIFY2(section.appendix().find(std::string("started with ") + setting) != std::string::npos,
               section.appendix().c_str());
    }
    QVERIFY(BenchSection().by_default());
  }

  void multi_device_section_passes_on_sim() {
    // Across sim:0 and sim:1: every comparison against one_device passes, and
    // the figures' tables come with numbers, not "not measured".
    MultiDeviceSection section;
    std::set<std::string> ops;
    const auto records = section.run({Device{DeviceKind::Sim, 0}, 1, {}, {}});
    for (const auto& r : records) {
      QVERIFY2(r.passed, (r.op + " " + r.shape + ": " + r.detail).c_str());
      ops.insert(r.op);
    }
    QCOMPARE(ops, (std::set<std::string>{"mirrored_across", "mixed_placement", "synchronized_batch_norm"}));
    const std::string figures = section.appendix();
    QVERIFY2(figures.find("not measured") == std::string::npos, figures.c_str());
    QVERIFY2(figures.find("| 1 MiB |") != std::string::npos && figures.find("exact") != std::string::npos, figures.c_str());
    QVERIFY2(figures.find("| fashion-mlp | 256 |") != std::string::npos, figures.c_str());
  }

  void multi_device_section_says_why_it_checks_nothing_on_one_gpu() {
    // A CPU device stands for a machine with one GPU: no device of its kind
    // to pair with, so no records and an appendix that says so.
    MultiDeviceSection section;
    QVERIFY(section.run({Device{DeviceKind::Cpu, 0}, 1, {}, {}}).empty());
    QVERIFY2(section.appendix().find("Nothing checked") != std::string::npos, section.appendix().c_str());
  }

  void ops_and_training_on_a_gpu() {
    // The same sections on gpu:0 where the machine has one (the GPU check
    // script runs them all, with the benchmark); skipped with the reason elsewhere.
    const GpuInventory gpus = gpu_inventory();
    if (gpus.gpus.empty()) QSKIP(("no GPU: " + gpus.unavailable).c_str());
    const SectionContext gpu{Device{DeviceKind::Gpu, 0}, 1, {}, {}};
    OpsSection ops;
    TrainingSection training;
    for (CheckSection* section : std::vector<CheckSection*>{&ops, &training})
      for (const auto& r : section->run(gpu)) QVERIFY2(r.passed, (r.op + " " + r.shape + ": " + r.detail).c_str());
  }

  // The bench's tracing-cost figure: whole epochs after the first, each way
  // of tracing (on sim:0, two epochs of a large batch, to be short).
  void sustained_throughput_traced_and_not() {
    const Device sim{DeviceKind::Sim, 0};
    for (const std::optional<trace::DeviceLanes> lanes :
         {std::optional<trace::DeviceLanes>{}, std::optional{trace::DeviceLanes::Sampled},
          std::optional{trace::DeviceLanes::EveryStep}, std::optional{trace::DeviceLanes::Off}}) {
      const double samples_per_sec = sustained_throughput(sim, "fashion-mlp", 8192, 2, lanes);
      QVERIFY2(std::isfinite(samples_per_sec) && samples_per_sec > 0, qPrintable(QString::number(samples_per_sec)));
    }
    // One epoch leaves no step to count: said, not a figure.
    QVERIFY_THROWS_EXCEPTION(std::exception, sustained_throughput(sim, "fashion-mlp", 8192, 1, std::nullopt));
  }

  // The bench's breakdown of a replayed step on the device: its phases
  // inside its frame.
  void device_phase_times_on_sim() {
    const DevicePhaseTimes t = device_phase_times(Device{DeviceKind::Sim, 0}, "fashion-cnn", 32, 10);
    QVERIFY(t.forward_us > 0 && t.backward_us > 0 && t.optimizer_us > 0);
    QVERIFY2(t.rest_us >= -1 && t.rest_us < t.step_us && t.forward_us < t.step_us && t.backward_us < t.step_us,
             qPrintable(QString("step %1: forward %2, backward %3, optimizer %4, rest %5")
                            .arg(t.step_us)
                            .arg(t.forward_us)
                            .arg(t.backward_us)
                            .arg(t.optimizer_us)
                            .arg(t.rest_us)));
  }

  // The bench's table of convolution ways: the batches asked for, every way
  // any row raced as a column, refusals and ways not offered told apart.
  void convolution_choices_table_rows_and_columns() {
    const Window2D layer2{64, 14, 14, 32, 5, 5, 1, 1, 2, 2, 14, 14};
    Window2D other = layer2;
    other.batch = 100;
    Window2D layer1{256, 28, 28, 1, 5, 5, 1, 1, 2, 2, 28, 28};
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<ConvolutionChoice> choices{
        {layer2, 64, "forward", "im2col", {{"cudnn", 0.245}, {"cudnn-nchw", inf}, {"im2col", 0.071}}},
        {other, 64, "forward", "cudnn", {{"cudnn", 0.1}, {"im2col", 0.2}}},
        {layer1, 32, "gradient of the kernel", "im2col-slices", {{"im2col-slices", 0.035}, {"im2col", 0.05}}},
        {layer1, 32, "forward", "cudnn", {}},
    };
    const std::string md = convolution_choices_table(choices, {64, 256});
    QVERIFY2(md.find("| input (NHWC) | kernel | filters | direction | chosen | cudnn | cudnn-nchw | im2col | "
                     "im2col-slices |") != std::string::npos,
             md.c_str());
    QVERIFY2(md.find("| 64x14x14x32 | 5x5 s1 | 64 | forward | im2col | 0.245 ms | refused | 0.071 ms |  |") !=
                 std::string::npos,
             md.c_str());
    QVERIFY2(md.find("| 256x28x28x1 | 5x5 s1 | 32 | gradient of the kernel | im2col-slices |  |  | 0.050 ms | 0.035 ms |") !=
                 std::string::npos,
             md.c_str());
    QVERIFY2(md.find("| cudnn (untimed) |") != std::string::npos, md.c_str());
    QVERIFY2(md.find("100x14x14x32") == std::string::npos, md.c_str());  // batch 100 not asked for
    QVERIFY(convolution_choices_table(choices, {1024}).find("No convolution way") != std::string::npos);
  }

  void a_broken_run_is_a_failed_record_not_a_crash() {
    // A device index that does not exist: the section reports it and goes on.
    TrainingSection section;
    const auto records = section.run({Device{DeviceKind::Sim, 42}, 1, {}, {}});
    QVERIFY(!records.empty());
    for (const auto& r : records) {
      QVERIFY(!r.passed);
      QVERIFY2(r.detail.find("sim:42") != std::string::npos, r.detail.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestGpuCheckTraining)
#include "test_gpu_check_training.moc"
