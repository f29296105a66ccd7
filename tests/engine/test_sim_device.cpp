// The strict simulated accelerator: memory the host cannot touch, work that
// runs later on the device's thread, copies that land only at a
// synchronisation, errors reported at the sync point; and the engine's ops on
// it give the CPU's results.
#include <QtTest/QtTest>
#include <bit>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <future>
#include <thread>

#include "TestUtil.h"
#include "backend/Backend.h"
#include "backend/cpu/CpuBackend.h"
#include "core/DynamicLibrary.h"
#include "core/Rng.h"
#include "core/Tensor.h"
#include "core/ThreadPool.h"
#include "data/BatchPipeline.h"
#include "distribute/DistributedDataset.h"
#include "nn/Dense.h"
#include "nn/Dropout.h"
#include "nn/GradientTape.h"
#include "nn/Loss.h"
#include "nn/Optimizer.h"
#include "nn/Sequential.h"

using namespace strata;
using testutil::random_vector;

namespace {
const Device kSim{DeviceKind::Sim, 0};
const Device kHost{};

// Trains a small MLP for a few Adam steps with every tensor on `device`; returns the weights.
std::vector<std::vector<float>> train_mlp(const Device& device, const std::vector<float>& x, const std::vector<int32_t>& y) {
  set_global_seed(7);
  VariableComponentsScope scope({device});
  // Dropout: its call counter lives in device memory and advances there, so
  // each step must draw the CPU's next mask.
  nn::Sequential model{nn::Dense(12, Activation::Relu), nn::Dropout(0.25f), nn::Dense(4)};
  model.build(Shape{6});
  nn::Adam adam(0.01f);
  nn::SparseCategoricalCrossentropy xent(true, nn::Reduction::None);
  const Tensor features = Tensor::from(Shape{8, 6}, x, device);
  const Tensor labels = Tensor::from_ints(Shape{8}, y, device);
  auto vars = model.trainable_variables();
  for (int step = 0; step < 5; ++step) {
    GradientTape tape;
    Tensor loss = nn::compute_average_loss(xent(labels, model(features, true, tape)), 8);
    adam.apply_gradients(tape.gradient(loss, vars), vars);
  }
  std::vector<std::vector<float>> out;
  for (auto* v : vars) out.push_back(v->value().values());
  return out;
}
}  // namespace

class TestSimDevice : public QObject {
  Q_OBJECT

private slots:
  void initTestCase() {
    qInfo("random seed %llu (set STRATA_TEST_SEED to replay)", static_cast<unsigned long long>(testutil::process_seed()));
  }

  void host_accessors_name_the_device() {
    Tensor t = Tensor::zeros(Shape{3}, kSim);
    QCOMPARE(t.device(), kSim);
    STRATA_EXPECT_ERROR(t.data(), ErrorKind::Runtime, "sim:0");
    STRATA_EXPECT_ERROR(Tensor::zeros(Shape{}, kSim).item(), ErrorKind::Runtime, "to(cpu)");
    STRATA_EXPECT_ERROR(t.span(), ErrorKind::Runtime, "sim:0");
  }

  // The simulated devices' environment settings: a bad value is refused naming
  // the variable (it once gave no devices, or 16 GiB, without a word), or,
  // where the caller asks, lists no sim devices and says why.
  void bad_simulated_device_settings_name_the_variable() {
    const QByteArray devices = qgetenv("STRATA_SIM_DEVICES"), memory = qgetenv("STRATA_SIM_MEMORY_GB");
    const auto restore = qScopeGuard([&] {
      for (auto [name, value] : {std::pair{"STRATA_SIM_DEVICES", devices}, std::pair{"STRATA_SIM_MEMORY_GB", memory}})
        value.isNull() ? qunsetenv(name) : qputenv(name, value);
    });
    auto sims = [](const std::vector<DeviceInfo>& list) {
      return static_cast<int>(
          std::count_if(list.begin(), list.end(), [](const DeviceInfo& d) { return d.device.kind == DeviceKind::Sim; }));
    };
    qputenv("STRATA_SIM_DEVICES", "2");
    qputenv("STRATA_SIM_MEMORY_GB", "3");
    QCOMPARE(sims(list_devices({})), 2);
    QCOMPARE(sim_device_memory_bytes(), size_t{3} << 30);
    qunsetenv("STRATA_SIM_MEMORY_GB");
    QCOMPARE(sim_device_memory_bytes(), size_t{16} << 30);
    for (const char* bad : {"two", "-1", "9", "2 ", "+2"}) {
      qputenv("STRATA_SIM_DEVICES", bad);
      STRATA_EXPECT_ERROR(list_devices({}), ErrorKind::BadInput, "STRATA_SIM_DEVICES");
      STRATA_EXPECT_ERROR(listed_sim_devices(), ErrorKind::BadInput, std::string("got '") + bad + "'");
      std::string problem;
      const auto listed = list_devices({}, &problem);
      QCOMPARE(sims(listed), 0);
      QVERIFY(!listed.empty());  // the CPU devices are still there
      QVERIFY2(problem.find("STRATA_SIM_DEVICES: expected a number of simulated devices from 0 to 8") == 0, problem.c_str());
    }
    qputenv("STRATA_SIM_DEVICES", "1");
    for (const char* bad : {"0", "lots", "99999999999"}) {
      qputenv("STRATA_SIM_MEMORY_GB", bad);
      STRATA_EXPECT_ERROR(sim_device_memory_bytes(), ErrorKind::BadInput, "STRATA_SIM_MEMORY_GB");
      STRATA_EXPECT_ERROR(list_devices({}), ErrorKind::BadInput, "from 1 to 4096");
    }
  }

  void round_trip_and_copies_between_devices() {
    const auto v = random_vector(1000);
    Tensor a = Tensor::from(Shape{10, 100}, v, kSim);
    Tensor b = a.to(Device{DeviceKind::Sim, 1});  // peer copy
    Tensor c = b.slice_rows(3, 7);
    QCOMPARE(b.values(), v);
    const auto rows = c.values();
    QCOMPARE(rows.size(), size_t{400});
    QCOMPARE(rows.front(), v[300]);
    QCOMPARE(rows.back(), v[699]);
    Tensor host = Tensor::zeros(Shape{10, 100});
    host.copy_from(a);  // into the host: complete on return
    QCOMPARE(std::vector<float>(host.data(), host.data() + 1000), v);
  }

  // rows() is a view, on a device as on the host: the same values as the
  // copy, and a write through it lands in the tensor it views.
  void row_views_share_memory() {
    const auto v = random_vector(1000);
    for (const Device& device : {Device{}, kSim}) {
      Tensor a = Tensor::from(Shape{10, 100}, v, device);
      Tensor view = a.rows(3, 7);
      QCOMPARE(view.shape(), (Shape{4, 100}));
      QCOMPARE(view.values(), a.slice_rows(3, 7).values());
      QVERIFY(view.id() != a.id());
      view.fill(-1.0f);
      const auto after = a.values();
      for (size_t i = 0; i < after.size(); ++i) QCOMPARE(after[i], i >= 300 && i < 700 ? -1.0f : v[i]);
      QCOMPARE(a.rows(10, 10).numel(), int64_t{0});
      STRATA_EXPECT_ERROR(a.rows(8, 11), ErrorKind::Runtime, "rows [8, 11) out of range for shape");
    }
  }

  void a_read_before_synchronising_sees_poison() {
    // The device copies into host memory only when the host synchronises:
    // however fast the device thread is, skipping the sync reads garbage.
    Backend& be = backend_for(kSim);
    Tensor d = Tensor::full(Shape{4}, 2.5f, kSim);
    std::vector<float> out(4, 0.0f);
    be.copy_to_host(out.data(), d.ptr(), 4 * sizeof(float));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // long enough for the device to finish
    for (float v : out) QVERIFY(std::isnan(v));
    be.synchronize();
    for (float v : out) QCOMPARE(v, 2.5f);
  }

  // A GPU's memory pool hands out blocks with whatever they last held: sim
  // hands out NaN, fresh or reused, also inside a capture, so a kernel that
  // reads memory nobody wrote cannot pass on sim and fail on a GPU.
  void fresh_device_memory_is_nan() {
    Backend& be = backend_for(kSim);
    for (int round = 0; round < 2; ++round) {  // the second reuses the first's block
      std::vector<float> out(1000, 0.0f);
      {
        Tensor d = Tensor::empty(Shape{1000}, kSim);
        be.copy_to_host(out.data(), d.ptr(), out.size() * sizeof(float));
        be.synchronize();
      }
      for (float v : out) QVERIFY(std::isnan(v));
      Tensor written = Tensor::full(Shape{1000}, 1.0f, kSim);  // leaves ones in the block for the next round
    }
  }

  // cuBLASLt, cuDNN and NCCL are opened at run time; when the loader's
  // search misses them (a toolkit folder not in its cache, a wheel's folder)
  // they are opened from the folders the build found them in. Shown here
  // with zlib under a name only a temporary folder has.
  void vendor_libraries_open_from_the_build_s_folders() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string name = "libstrata-fallback-test.so.1";
    QVERIFY(QFile::link("/lib/x86_64-linux-gnu/libz.so.1", dir.filePath(QString::fromStdString(name))));
    STRATA_EXPECT_ERROR(DynamicLibrary(name, "a test library", "Put it somewhere.", "/nonexistent"), ErrorKind::Runtime,
                        "also not in /nonexistent");
    const DynamicLibrary lib(name, "a test library", "", "/nonexistent::" + dir.path().toStdString());
    const char* (*version)() = nullptr;
    lib.bind(version, "zlibVersion", "not zlib");
    QVERIFY(version && version()[0] == '1');
  }

  void kernels_refuse_host_pointers() {
    Backend& be = backend_for(kSim);
    std::vector<float> host(8, 1.0f);
    Tensor d = Tensor::zeros(Shape{8}, kSim);
    STRATA_EXPECT_ERROR(be.axpby(8, 1.0f, host.data(), 1.0f, d.ptr()), ErrorKind::Runtime, "host pointer");
    STRATA_EXPECT_ERROR(be.copy_from_host(d.ptr(), d.ptr(), 32), ErrorKind::Runtime, "device memory");
  }

  void host_dereference_of_device_memory_faults() {
    Tensor d = Tensor::full(Shape{16}, 1.0f, kSim);
    const float* p = d.ptr();
    const pid_t child = fork();
    if (child == 0) {
      std::signal(SIGSEGV, SIG_DFL);  // die by the signal, not by a sanitizer's report of it
      volatile float v = *p;  // must fault: device memory is not mapped for the host
      (void)v;
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    QVERIFY2(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "reading device memory on the host did not fault");
  }

  void device_errors_surface_at_the_sync_point() {
    // Bad labels: no exception where the loss is queued, the flag at the sync.
    Backend& be = backend_for(kSim);
    nn::SparseCategoricalCrossentropy xent(true, nn::Reduction::None);
    Tensor logits = Tensor::zeros(Shape{2, 3}, kSim);
    Tensor labels = Tensor::from_ints(Shape{2}, std::vector<int32_t>{0, 7}, kSim);
    Tensor loss = xent(labels, logits);
    Tensor flag = Tensor::empty(Shape{2}, kSim);
    be.copy(flag.ptr(), be.label_error_flag(), 2 * sizeof(float));
    be.fill32(be.label_error_flag(), 2, 0);
    const auto f = flag.values();
    QCOMPARE(f[0], 1.0f);
    QCOMPARE(f[1], 7.0f);
    QCOMPARE(loss.values()[1], 0.0f);
  }

  void training_on_sim_matches_cpu() {
    const auto x = random_vector(48);
    const std::vector<int32_t> y{0, 1, 2, 3, 3, 2, 1, 0};
    CpuBackend cpu(1);  // the sim runs the CPU kernels on one thread: same bits
    ScopedCpuBackend use(&cpu);
    const auto on_cpu = train_mlp(kHost, x, y);
    const auto on_sim = train_mlp(kSim, x, y);
    QCOMPARE(on_sim.size(), on_cpu.size());
    for (size_t i = 0; i < on_cpu.size(); ++i) QCOMPARE(on_sim[i], on_cpu[i]);
  }

  void memory_freed_on_the_main_stream_waits_for_its_kernels_while_branches_may_run() {
    // A thread in a side branch (the weight gradients) and another queueing
    // work on the main stream (the data pipeline): memory the second frees
    // after queueing a read of it must not reach the branch, which runs
    // beside the main stream, before that read has run. It once did, and a
    // batch's row numbers were overwritten before their gather read them.
    const Device sim{DeviceKind::Sim, 6};
    Backend& be = backend_for(sim);
    be.allow_branches(true);
    constexpr int64_t kOdd = 12347;  // a size no other block of this device has
    const std::vector<float> want = random_vector(static_cast<size_t>(kOdd));
    const Tensor a = Tensor::full(Shape{384, 384}, 1.0f, sim), b = Tensor::full(Shape{384, 384}, 1.0f, sim);
    Tensor product = Tensor::empty(Shape{384, 384}, sim), copied = Tensor::empty(Shape{kOdd}, sim);
    std::promise<void> in_branch, freed;
    std::thread branch([&] {
      be.begin_branch();
      in_branch.set_value();
      freed.get_future().wait();
      // Its memory may be the block just freed: written on the side stream at once.
      Tensor mine = Tensor::empty(Shape{kOdd}, sim);
      be.fill32(mine.ptr(), kOdd, 0x7fc00000u);
      be.end_branch();
      be.join_branch();
    });
    in_branch.get_future().wait();
    {
      Tensor read = Tensor::from(Shape{kOdd}, want, sim);
      // Keeps the main stream busy, so its read below comes late.
      for (int i = 0; i < 16; ++i) be.gemm(false, false, 384, 384, 384, 1.0f, a.ptr(), b.ptr(), 0.0f, product.ptr());
      be.copy(copied.ptr(), read.ptr(), kOdd * sizeof(float));
    }  // freed here, its copy still queued
    freed.set_value();
    branch.join();
    be.allow_branches(false);
    QCOMPARE(copied.values(), want);
  }

  // A device has one side branch: the thread that began it joins it, and
  // another thread's begin_branch meanwhile keeps its work on the main
  // stream (its join_branch must not join or clear the first thread's).
  // Allowances count: one run's allow_branches(false) leaves another's.
  void one_thread_at_a_time_holds_the_side_branch() {
    const Device sim{DeviceKind::Sim, 5};
    Backend& be = backend_for(sim);
    const auto branches = [&] { return be.counters().branches.load(); };
    be.allow_branches(true);
    be.allow_branches(true);
    be.allow_branches(false);
    const int64_t before = branches();
    be.begin_branch();
    QCOMPARE(branches() - before, int64_t{1});
    std::thread other([&] {
      be.begin_branch();
      be.end_branch();
      be.join_branch();
    });
    other.join();
    QCOMPARE(branches() - before, int64_t{1});
    // Still this thread's: work queued now runs on the side stream, and the
    // join orders the main stream after it.
    Tensor x = Tensor::empty(Shape{64}, sim);
    be.fill32(x.ptr(), 64, 0x3f800000u);  // 1.0f
    be.end_branch();
    be.begin_branch();  // ended, not joined: no second branch
    QCOMPARE(branches() - before, int64_t{1});
    be.join_branch();
    QCOMPARE(x.values(), std::vector<float>(64, 1.0f));
    std::thread again([&] {
      be.begin_branch();
      be.join_branch();
    });
    again.join();
    QCOMPARE(branches() - before, int64_t{2});
    be.allow_branches(false);
    be.begin_branch();
    be.join_branch();
    QCOMPARE(branches() - before, int64_t{2});
  }

  // Inside a capture the side branch's stream joins it, as a CUDA stream
  // that waits for an event of a capturing one does: every replay forks and
  // joins again, the two streams' parts running beside each other, and the
  // main stream's work after the join reads that replay's branch result,
  // never the previous replay's (the join's event is recorded anew by each).
  void a_captured_branch_forks_and_joins_in_every_replay() {
    const Device sim{DeviceKind::Sim, 4};
    Backend& be = backend_for(sim);
    be.allow_branches(true);
    constexpr int64_t n = 192;
    Tensor a = Tensor::zeros(Shape{n, n}, sim), b = Tensor::full(Shape{n, n}, 1.0f, sim);
    Tensor product = Tensor::empty(Shape{n, n}, sim), out = Tensor::empty(Shape{n, n}, sim);
    const int64_t before = be.counters().branches;
    be.begin_capture();
    {
      SideBranch branch(be);
      // Slow enough that an unordered main stream would copy before it ends.
      for (int i = 0; i < 6; ++i) be.gemm(false, false, n, n, n, 1.0f, a.ptr(), b.ptr(), 0.0f, product.ptr());
      Tensor scratch = Tensor::empty(Shape{n}, sim);  // the branch's own memory, freed in its order
      be.fill32(scratch.ptr(), n, 0);
    }
    be.copy(out.ptr(), product.ptr(), n * n * sizeof(float));
    GraphPtr graph = be.end_capture();
    QCOMPARE(be.counters().branches - before, int64_t{1});
    for (int r = 1; r <= 5; ++r) {
      be.fill32(a.ptr(), n * n, std::bit_cast<uint32_t>(static_cast<float>(r)));
      be.replay(graph);
      const std::vector<float> got = out.values();
      QCOMPARE(got.front(), static_cast<float>(r * n));
      QCOMPARE(got.back(), static_cast<float>(r * n));
    }
    be.allow_branches(false);
  }

  // A block the branch frees during a capture serves the main stream only
  // after the join (before it, a replay's branch may still use it), the
  // branch reuses only blocks ordered before its work, and a branch left
  // unjoined fails the capture's end (CUDA: cudaErrorStreamCaptureUnjoined).
  void a_captured_branch_keeps_its_memory_to_the_join_and_must_be_joined() {
    const Device sim{DeviceKind::Sim, 4};
    Backend& be = backend_for(sim);
    be.allow_branches(true);
    constexpr int64_t kOdd = 12343;  // a size no other block of this device has
    be.begin_capture();
    const float* freed = nullptr;
    {
      SideBranch branch(be);
      {
        Tensor mine = Tensor::empty(Shape{kOdd}, sim);
        be.fill32(mine.ptr(), kOdd, 0);
        freed = mine.ptr();
      }
      branch.end();
      Tensor main = Tensor::empty(Shape{kOdd}, sim);
      be.fill32(main.ptr(), kOdd, 0);
      QVERIFY(main.ptr() != freed);
    }
    {
      // Joined: the two blocks freed during the capture serve the next two.
      Tensor one = Tensor::empty(Shape{kOdd}, sim), two = Tensor::empty(Shape{kOdd}, sim);
      be.fill32(one.ptr(), kOdd, 0);
      be.fill32(two.ptr(), kOdd, 0);
      QVERIFY(one.ptr() == freed || two.ptr() == freed);
    }
    GraphPtr graph = be.end_capture();
    be.replay(graph);
    be.synchronize();

    // A captured branch reuses what it freed itself and what was freed
    // before its fork, never a block the main stream freed after the fork.
    constexpr int64_t kBefore = 12347, kAfter = 12349, kOwn = 12351;
    const auto made = [&](int64_t n) {
      Tensor t = Tensor::empty(Shape{n}, sim);
      be.fill32(t.ptr(), n, 0);
      return t;
    };
    be.begin_capture();
    const float* before = made(kBefore).ptr();  // freed on the main stream before the fork
    {
      SideBranch branch(be);
      const float* after = nullptr;
      std::thread main_stream([&] { after = made(kAfter).ptr(); });  // another thread's work: the main stream's
      main_stream.join();
      const Tensor not_after = made(kAfter), reused = made(kBefore);
      QVERIFY(not_after.ptr() != after);
      QCOMPARE(reused.ptr(), before);
      const float* own = made(kOwn).ptr();
      QCOMPARE(made(kOwn).ptr(), own);
    }
    be.replay(be.end_capture());
    be.synchronize();

    Tensor x = Tensor::zeros(Shape{64}, sim);
    be.begin_capture();
    be.begin_branch();
    be.add_scalar(64, 1.0f, x.ptr());
    be.end_branch();
    STRATA_EXPECT_ERROR(be.end_capture(), ErrorKind::Runtime, "not joined");
    be.join_branch();
    be.allow_branches(false);
    // The device works as before afterwards; the abandoned capture ran nothing.
    be.add_scalar(64, 2.0f, x.ptr());
    QCOMPARE(x.values(), std::vector<float>(64, 2.0f));
  }

  void capture_records_and_replay_repeats() {
    // Work queued while capturing is recorded, not run; each replay runs it
    // again on the same memory (here: adds 1 to a counter three times).
    Backend& be = backend_for(Device{DeviceKind::Sim, 3});
    Tensor counter = Tensor::zeros(Shape{4}, Device{DeviceKind::Sim, 3});
    be.begin_capture();
    be.add_scalar(4, 1.0f, counter.ptr());
    GraphPtr graph = be.end_capture();
    QCOMPARE(counter.values(), std::vector<float>(4, 0.0f));  // capturing computed nothing
    for (int i = 0; i < 3; ++i) be.replay(graph);
    QCOMPARE(counter.values(), std::vector<float>(4, 3.0f));
  }

  void capture_refuses_what_a_replay_cannot_repeat() {
    Backend& be = backend_for(Device{DeviceKind::Sim, 3});
    const std::vector<float> host(4, 1.0f);
    Tensor t = Tensor::zeros(Shape{4}, Device{DeviceKind::Sim, 3});
    be.begin_capture();
    // Host data is read once, at the call: a replay would copy stale values.
    STRATA_EXPECT_ERROR(be.copy_from_host(t.ptr(), host.data(), 16), ErrorKind::Runtime, "copy from the host");
    STRATA_EXPECT_ERROR(be.synchronize(), ErrorKind::Runtime, "captured");
    {
      // Memory made during the capture and still in use at its end would be
      // overwritten by every replay.
      Tensor escaping = Tensor::empty(Shape{64}, Device{DeviceKind::Sim, 3});
      be.fill32(escaping.ptr(), 64, 0);
      STRATA_EXPECT_ERROR(be.end_capture(), ErrorKind::Runtime, "still in use");
    }
    {
      // Memory older than the capture and freed during it is not the graph's
      // to free (CUDA refuses), but every replay still writes it: it is
      // returned with the graph, not handed out again while the graph lives.
      auto older = std::make_unique<Tensor>(Tensor::zeros(Shape{32}, Device{DeviceKind::Sim, 3}));
      const float* older_memory = older->ptr();
      be.begin_capture();
      be.add_scalar(32, 1.0f, older->ptr());
      older.reset();
      GraphPtr g = be.end_capture();
      Tensor fresh = Tensor::zeros(Shape{32}, Device{DeviceKind::Sim, 3});
      QVERIFY(fresh.ptr() != older_memory);
      be.replay(g);
      QCOMPARE(fresh.values(), std::vector<float>(32, 0.0f));
    }
    {
      // An event recorded while capturing belongs to the graph: only the
      // same capture may wait for it (CUDA: cudaErrorCapturedEvent).
      be.begin_capture();
      EventPtr inside = be.record_event();
      be.wait_event(inside);
      GraphPtr g = be.end_capture();
      be.replay(g);
      STRATA_EXPECT_ERROR(be.wait_host(inside), ErrorKind::Runtime, "recorded while a step was captured");
      STRATA_EXPECT_ERROR(be.wait_event(inside), ErrorKind::Runtime, "recorded while it was captured");
    }
    {
      // Nor may a captured step wait for an event recorded before it
      // (CUDA: cudaErrorStreamCaptureIsolation).
      EventPtr before = be.record_event();
      be.begin_capture();
      STRATA_EXPECT_ERROR(be.wait_event(before), ErrorKind::Runtime, "recorded before the capture");
      be.end_capture();
      be.wait_host(before);
    }
    // The device works as before afterwards.
    be.copy_from_host(t.ptr(), host.data(), 16);
    QCOMPARE(t.values(), host);
  }

  void steady_steps_allocate_nothing() {
    const auto x = random_vector(48);
    const std::vector<int32_t> y{0, 1, 2, 3, 3, 2, 1, 0};
    Backend& be = backend_for(Device{DeviceKind::Sim, 2});
    train_mlp(Device{DeviceKind::Sim, 2}, x, y);  // warm-up: the cache fills
    const int64_t before = be.counters().allocations;
    train_mlp(Device{DeviceKind::Sim, 2}, x, y);
    QCOMPARE(be.counters().allocations.load(), before);
  }

  void pixels_cross_as_uint8_and_become_floats_on_the_device() {
    // Replicas on accelerators: the pipeline keeps image batches as uint8 and
    // each device converts (and standardises) its rows, to the same bits the
    // host's conversion gives.
    std::vector<uint8_t> pixels(12 * 6);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
    std::vector<int32_t> labels(12);
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 4);
    for (bool standardise : {false, true}) {
      Dataset ds = Dataset::from_uint8(Shape{2, 3, 1}, pixels, labels, 4);
      ds.set_scale(1.0f / 255.0f);
      if (standardise) ds.standardize_from(ds);
      PipelineOptions po;
      po.batch_size = 5;
      po.shuffle = false;
      auto pipeline = std::make_shared<BatchPipeline>(std::make_shared<const Dataset>(ds), po);
      DistributedDataset dist(pipeline, 2, 0, -1, {kSim, Device{DeviceKind::Sim, 1}});
      dist.begin_epoch(0);
      const auto parts = dist.next();
      QVERIFY(parts.has_value());
      const Batch host = ds.range(0, 5);
      std::vector<float> got;
      for (int r = 0; r < 2; ++r) {
        QCOMPARE((*parts)[r].features.dtype(), DType::Float32);
        QCOMPARE((*parts)[r].features.device(), (Device{DeviceKind::Sim, r}));
        const auto v = (*parts)[r].features.values();
        got.insert(got.end(), v.begin(), v.end());
      }
      QCOMPARE(got, host.features.values());
    }
  }

  void thread_pool_takes_concurrent_callers() {
    // Two threads share one pool (the dashboard evaluates a checkpoint while
    // a run trains): each job must see all of its own ranges and only those.
    ThreadPool pool(2);
    std::atomic<int> bad{0};
    auto hammer = [&](int id) {
      for (int round = 0; round < 300; ++round) {
        std::vector<int> seen(1000, 0);
        pool.parallel_for(1000, 10, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) seen[static_cast<size_t>(i)] += id;
        });
        for (int s : seen)
          if (s != id) ++bad;
      }
    };
    std::thread a(hammer, 1), b(hammer, 2);
    a.join();
    b.join();
    QCOMPARE(bad.load(), 0);
    // A job that calls the pool again runs the inner call inline.
    std::atomic<int64_t> total{0};
    pool.parallel_for(4, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) pool.parallel_for(100, 1, [&](int64_t l, int64_t h) { total += h - l; });
    });
    QCOMPARE(total.load(), int64_t{400});
  }
};

QTEST_GUILESS_MAIN(TestSimDevice)
#include "test_sim_device.moc"
