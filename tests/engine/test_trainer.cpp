// The Trainer on synthetic data: convergence, the event sequence, stop from
// another thread, divergence to NaN, and bad input caught by prepare().
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <cmath>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "TestUtil.h"
#include "engine/RecordingSink.h"
#include "project/ProjectFile.h"
#include "trace/Span.h"
#include "train/Trainer.h"

using namespace strata;
using nlohmann::json;

namespace {

RunConfig synthetic_config(int epochs = 4) {
  json j = json::parse(R"({
    "format": "strata-project", "version": 1, "name": "trainer-test",
    "dataset": {"kind": "synthetic", "synthetic_examples": 1000, "synthetic_features": 16, "synthetic_classes": 4},
    "model": {"layers": [{"type": "dense", "units": 32, "activation": "relu"}, {"type": "dense", "units": 4}]},
    "training": {"epochs": 4, "batch_size": 50, "optimizer": {"type": "adam", "learning_rate": 0.01}, "seed": 7, "threads": 2},
    "strategy": {"name": "one_device"}
  })");
  j["training"]["epochs"] = epochs;
  return project_from_json(j);
}

// A Fashion-MNIST-shaped training set of `n` images (IDX files of random
// pixels and labels) in `dir`, as dataset files: for tests that compare
// runs with each other, where loading the real files' 60,000 images would
// take most of their time under ThreadSanitizer.
void write_image_set(const QString& dir, int n, DatasetConfig& dataset) {
  std::mt19937 random(11);
  std::vector<uint8_t> pixels(static_cast<size_t>(n) * 28 * 28), classes(static_cast<size_t>(n));
  for (uint8_t& p : pixels) p = static_cast<uint8_t>(random() & 0xff);
  for (uint8_t& c : classes) c = static_cast<uint8_t>(random() % 10);
  const std::string images = (dir + "/images-idx3-ubyte").toStdString(), labels = (dir + "/labels-idx1-ubyte").toStdString();
  const auto count = static_cast<uint32_t>(n);
  testutil::write_file(images, testutil::idx_bytes({count, 28, 28}, pixels));
  testutil::write_file(labels, testutil::idx_bytes({count}, classes));
  dataset.kind = "idx";
  dataset.path.clear();
  dataset.train_images = images;
  dataset.train_labels = labels;
}

// Runs `config`, returning every span the listener got (none when its
// timeline is off) and the run's status in `status`.
std::vector<trace::Span> traced_run(const RunConfig& config, RecordingSink& sink, std::string& status) {
  Trainer trainer(config, sink);
  trainer.prepare();
  std::mutex mutex;
  std::vector<trace::Span> spans;
  trainer.set_span_listener([&](const std::vector<trace::Span>& s) {
    std::lock_guard lock(mutex);
    spans.insert(spans.end(), s.begin(), s.end());
  });
  status = status_name(trainer.run().status);
  return spans;
}

}  // namespace

class TestTrainer : public QObject {
  Q_OBJECT

private slots:
  void converges_with_event_sequence() {
    RecordingSink sink;
    RunConfig config = synthetic_config(5);
    Trainer trainer(config, sink);
    trainer.prepare();
    QCOMPARE(QString::fromStdString(trainer.strategy().name()), QString("one_device"));
    FinishedEvent fin = trainer.run();
    QCOMPARE(QString(status_name(fin.status)), QString("completed"));
    QCOMPARE(fin.epochs_completed, 5);

    // run_started first, finished last, and they agree with the data.
    QVERIFY(sink.events.size() > 2);
    QVERIFY(std::holds_alternative<RunStartedEvent>(sink.events.front()));
    QVERIFY(std::holds_alternative<FinishedEvent>(sink.events.back()));
    QVERIFY(sink.all<StepSpansEvent>().empty());  // tracing is off unless asked for
    const auto started = std::get<RunStartedEvent>(sink.events.front());
    QCOMPARE(started.train_examples, int64_t{800});  // the synthetic source is split 80/20
    QCOMPARE(started.validation_examples, int64_t{200});
    QCOMPARE(started.steps_per_epoch, int64_t{16});
    QCOMPARE(started.epochs, 5);
    QCOMPARE(started.global_batch, int64_t{50});
    QCOMPARE(started.replicas, 1);
    QCOMPARE(started.params, int64_t{16 * 32 + 32 + 32 * 4 + 4});
    QCOMPARE(started.devices, std::vector<std::string>{"cpu:0"});

    // step... epoch, step... epoch, ..., finished; numbering consistent.
    int64_t step = 0, epoch_step = 0;
    int epoch = 1;
    for (size_t i = 1; i + 1 < sink.events.size(); ++i) {
      const Event& e = sink.events[i];
      if (auto* s = std::get_if<StepEvent>(&e)) {
        QCOMPARE(s->step, ++step);
        QCOMPARE(s->epoch, epoch);
        QCOMPARE(s->epoch_step, ++epoch_step);
        QVERIFY(std::isfinite(s->loss));
        QCOMPARE(s->replica_losses.size(), size_t(1));
        QVERIFY(std::fabs(s->replica_losses[0] - s->loss) < 1e-5 * std::max(1.0, s->loss));
        QCOMPARE(s->lr, 0.01);  // the decimal, not the widened float
      } else if (auto* ep = std::get_if<EpochEvent>(&e)) {
        QCOMPARE(ep->epoch, epoch);
        QCOMPARE(epoch_step, started.steps_per_epoch);
        QVERIFY(ep->val_loss.has_value() && ep->val_accuracy.has_value());
        ++epoch;
        epoch_step = 0;
      } else {
        QFAIL(qPrintable(QString("unexpected event '%1' in the middle of the run").arg(event_type(e))));
      }
    }
    QCOMPARE(step, int64_t{5} * started.steps_per_epoch);
    QCOMPARE(fin.steps, step);
    QCOMPARE(epoch, 6);

    // Converges: loss goes down, final validation accuracy high.
    auto epochs = sink.all<EpochEvent>();
    QCOMPARE(epochs.size(), size_t(5));
    QVERIFY2(epochs.back().loss < 0.5 * epochs.front().loss,
             qPrintable(QString("loss %1 -> %2").arg(epochs.front().loss).arg(epochs.back().loss)));
    for (size_t i = 1; i < epochs.size(); ++i) QVERIFY(epochs[i].loss < epochs[i - 1].loss * 1.05);
    QVERIFY2(*epochs.back().val_accuracy > 0.9, qPrintable(QString("val accuracy %1").arg(*epochs.back().val_accuracy)));
    QVERIFY(epochs.back().accuracy > 0.9);
    auto steps = sink.all<StepEvent>();
    QVERIFY(steps.back().loss < steps.front().loss);

    // evaluate() reproduces the last epoch's validation figures.
    auto v = trainer.evaluate(*trainer.data().validation);
    QCOMPARE(v.examples, int64_t{200});
    QVERIFY(std::fabs(v.accuracy - *epochs.back().val_accuracy) < 1e-12);
    QVERIFY(std::fabs(v.loss - *epochs.back().val_loss) < 1e-9);
  }

  // Each step reports its training accuracy (the epoch's is their
  // batch-weighted mean) and each replica's compute time; a replica made
  // ten times slower shows the largest time in total. (Three times was too
  // narrow a margin: three replicas share two cores, and under a loaded
  // machine's scheduling noise the totals came within 1.5x of each other.)
  void step_accuracy_and_replica_times() {
    RecordingSink sink;
    RunConfig config = synthetic_config(2);
    config.strategy.name = "mirrored";
    config.strategy.devices = {"cpu:0", "cpu:1", "cpu:2"};
    config.strategy.straggler = 1;
    config.strategy.slowdown = 10;
    Trainer trainer(config, sink);
    trainer.prepare();
    QCOMPARE(QString(status_name(trainer.run().status)), QString("completed"));
    const auto steps = sink.all<StepEvent>();
    const auto epochs = sink.all<EpochEvent>();
    QCOMPARE(steps.size(), size_t{32});
    for (int e = 0; e < 2; ++e) {
      double sum = 0;
      for (int i = 0; i < 16; ++i) sum += steps[static_cast<size_t>(16 * e + i)].accuracy;
      QVERIFY2(std::fabs(sum / 16 - epochs[static_cast<size_t>(e)].accuracy) < 1e-12,  // equal batches of 50
               qPrintable(QString("epoch %1: mean of steps %2, epoch %3").arg(e + 1).arg(sum / 16).arg(epochs[size_t(e)].accuracy)));
    }
    double total[3] = {0, 0, 0};
    for (const auto& s : steps) {
      QVERIFY(s.accuracy >= 0 && s.accuracy <= 1);
      QCOMPARE(s.replica_step_times.size(), size_t{3});
      QCOMPARE(s.worker_step_times.size(), size_t{1});
      for (int r = 0; r < 3; ++r) total[r] += s.replica_step_times[size_t(r)];
    }
    // The other replicas wait in the all-reduce for it; that wait is not
    // their compute time. (Totals: one step of a tiny model is noise.)
    QVERIFY2(total[1] > 1.5 * std::max(total[0], total[2]),
             qPrintable(QString("replica seconds %1 %2 %3").arg(total[0]).arg(total[1]).arg(total[2])));
  }

  // The step timeline of a mirrored run with one slow replica: a
  // step_spans event per step, the straggler named as the slowest, the
  // others waiting for it, and the same spans in the trace file as the
  // listener saw.
  void step_timeline_shows_where_time_goes() {
    QTemporaryDir dir;
    RecordingSink sink;
    RunConfig config = synthetic_config(2);
    config.strategy.name = "mirrored";
    config.strategy.devices = {"cpu:0", "cpu:1", "cpu:2"};
    // A wide margin (the straggler sleeps ~149 steps' compute, milliseconds)
    // so a busy machine's scheduling noise cannot swap the roles: on two
    // cores shared with a build, the straggler itself waited 30 ms in 32
    // steps (for replicas descheduled at the later collective), against
    // ~60 ms for the others with 49 steps' sleep.
    config.strategy.straggler = 1;
    config.strategy.slowdown = 150;
    config.trace.enabled = true;
    config.trace.file = dir.filePath("trace.json").toStdString();
    Trainer trainer(config, sink);
    trainer.prepare();
    size_t listened = 0;
    trainer.set_span_listener([&](const std::vector<trace::Span>& spans) { listened += spans.size(); });
    QCOMPARE(QString(status_name(trainer.run().status)), QString("completed"));
    const auto steps = sink.all<StepSpansEvent>();
    QCOMPARE(steps.size(), size_t{32});
    int straggler_slowest = 0;
    double waited[3] = {0, 0, 0};
    std::set<std::string> kinds;
    for (const StepSpansEvent& s : steps) {
      QCOMPARE(s.lanes, (std::vector<std::string>{"replica 0", "replica 1", "replica 2", "run"}));
      kinds.insert(s.kinds.begin(), s.kinds.end());
      QCOMPARE(s.kind_ms.size(), s.kinds.size());
      for (size_t lane = 0; lane < 3; ++lane) {
        // Exclusive times never add up to more than the replica's step.
        double sum = 0;
        for (size_t k = 0; k < s.kinds.size(); ++k) {
          sum += s.kind_ms[k][lane];
          if (s.kinds[k] == "collective_wait") waited[lane] += s.kind_ms[k][lane];
        }
        QVERIFY2(sum <= s.step_ms[lane] + 0.005,
                 qPrintable(QString("step %1 lane %2: %3 > %4").arg(s.step).arg(lane).arg(sum).arg(s.step_ms[lane])));
      }
      straggler_slowest += s.slowest == "replica 1";
    }
    // (A kind under half a microsecond in a step rounds to nothing there. The
    // all-gather of host replicas sharing one copy of the weights copies
    // nothing: past its barrier's wait it usually rounds to nothing in every
    // step, so it is looked for in the trace file below.)
    for (const char* k : {"data_wait", "forward", "backward", "reduce_scatter", "optimizer", "collective_wait"})
      QVERIFY2(kinds.count(k), k);
    QVERIFY2(straggler_slowest >= 28, qPrintable(QString("replica 1 slowest in %1 of 32 steps").arg(straggler_slowest)));
    QVERIFY2(waited[0] > 2 * waited[1] && waited[2] > 2 * waited[1],
             qPrintable(QString("waits %1 %2 %3 ms").arg(waited[0]).arg(waited[1]).arg(waited[2])));

    std::ifstream in(config.trace.file);
    const auto file = nlohmann::json::parse(in);
    size_t complete = 0;
    std::set<int> tids;
    std::set<std::string> names;
    for (const auto& e : file.at("traceEvents"))
      if (e.at("ph") == "X") {
        ++complete;
        tids.insert(e.at("tid").get<int>());
        names.insert(e.at("name").get<std::string>());
      }
    QCOMPARE(complete, listened);
    QVERIFY(tids.count(0) && tids.count(1) && tids.count(2));
    QVERIFY(names.count("all_gather"));
  }

  // Each epoch ends with a partial batch, one step after many replays of the
  // full one: it runs op by op and leaves the full batch's graph in place,
  // so the step is captured once in the whole run, not once per epoch.
  void a_partial_last_batch_leaves_the_full_batch_graph_in_place() {
    RecordingSink sink;
    RunConfig config = synthetic_config(3);
    config.training.batch_size = 64;  // 1000 examples: every epoch ends with a partial batch
    config.strategy.devices = {"sim:0"};
    config.training.step_graphs = true;
    Trainer trainer(config, sink);
    trainer.prepare();
    QCOMPARE(QString(status_name(trainer.run().status)), QString("completed"));
    int captures = 0;
    for (const LogEvent& log : sink.all<LogEvent>()) captures += log.message.find("captured as a graph") != std::string::npos;
    QCOMPARE(captures, 1);
    QCOMPARE(static_cast<int>(sink.all<EpochEvent>().size()), 3);
  }

  // On an accelerator the host only queues the work: each replica gets a
  // device lane of what its device ran, timed in the device's stream, also
  // for steps replayed from a captured graph (which run no host code).
  void device_lanes_show_what_the_device_ran_data() {
    QTest::addColumn<QStringList>("devices");
    QTest::addColumn<bool>("graphs");
    QTest::newRow("one device, step graphs") << QStringList{"sim:0"} << true;
    QTest::newRow("one device, op by op") << QStringList{"sim:0"} << false;
    QTest::newRow("mirrored on two devices") << QStringList{"sim:0", "sim:1"} << false;
  }
  void device_lanes_show_what_the_device_ran() {
    QFETCH(QStringList, devices);
    QFETCH(bool, graphs);
    RecordingSink sink;
    RunConfig config = synthetic_config(1);
    config.strategy.name = devices.size() > 1 ? "mirrored" : "one_device";
    config.strategy.devices.clear();
    for (const QString& d : devices) config.strategy.devices.push_back(d.toStdString());
    config.training.step_graphs = graphs;
    config.trace.enabled = true;
    config.trace.device_lanes = trace::DeviceLanes::EveryStep;
    std::string status;
    const std::vector<trace::Span> spans = traced_run(config, sink, status);
    QCOMPARE(QString::fromStdString(status), QString("completed"));
    if (graphs) {
      bool captured = false;
      for (const LogEvent& log : sink.all<LogEvent>())
        captured |= log.message.find("captured as a graph") != std::string::npos;
      QVERIFY(captured);
    }

    const int n = static_cast<int>(devices.size());
    // step -> replica -> kinds seen on its device lane
    std::map<int64_t, std::map<int, std::set<std::string>>> on_device;
    std::map<std::tuple<int64_t, int, int>, double> host_start;  // (step, replica, kind) -> start
    for (const trace::Span& s : spans)
      if (s.lane.kind == trace::LaneKind::Replica) host_start[{s.step, s.lane.index, static_cast<int>(s.kind)}] = s.start_us;
    for (const trace::Span& s : spans) {
      if (s.lane.kind != trace::LaneKind::Device) continue;
      QVERIFY(s.lane.index >= 0 && s.lane.index < n);
      QVERIFY(s.duration_us >= 0);
      on_device[s.step][s.lane.index].insert(std::string(trace::span_kind_name(s.kind)));
      // A device cannot compute before its host queued the work (op by op;
      // a replay queues everything at once, before any of its spans). A
      // collective's device span starts when the device reaches it, which
      // may be before the host's transfer (drawn after its wait) starts.
      const bool computes = s.kind == trace::SpanKind::Forward || s.kind == trace::SpanKind::Backward ||
                            s.kind == trace::SpanKind::Optimizer;
      auto host = host_start.find({s.step, s.lane.index, static_cast<int>(s.kind)});
      if (computes && host != host_start.end() && !graphs)
        QVERIFY2(s.start_us >= host->second, qPrintable(QString("step %1 %2: device at %3 before host at %4")
                                                            .arg(s.step)
                                                            .arg(QString::fromUtf8(trace::span_kind_name(s.kind).data()))
                                                            .arg(s.start_us, 0, 'f', 1)
                                                            .arg(host->second, 0, 'f', 1)));
    }
    // Each step's device frame is its own, in step order: replays read late
    // (traced graphs alternate) never report another step's marks.
    std::map<int, std::map<int64_t, const trace::Span*>> frames;  // replica -> step -> device frame
    for (const trace::Span& s : spans)
      if (s.lane.kind == trace::LaneKind::Device && s.kind == trace::SpanKind::Step)
        QVERIFY2(frames[s.lane.index].emplace(s.step, &s).second, qPrintable(QString("step %1 twice").arg(s.step)));
    for (const auto& [replica, by_step] : frames) {
      const trace::Span* before = nullptr;
      for (const auto& [step, frame] : by_step) {
        if (before)
          QVERIFY2(frame->start_us >= before->start_us + before->duration_us,
                   qPrintable(QString("replica %1: step %2's device frame starts inside step %3's")
                                  .arg(replica)
                                  .arg(step)
                                  .arg(before->step)));
        before = frame;
      }
    }
    const auto summaries = sink.all<StepSpansEvent>();
    QCOMPARE(on_device.size(), summaries.size());  // every step
    for (const auto& [step, replicas] : on_device) {
      QCOMPARE(static_cast<int>(replicas.size()), n);
      for (const auto& [replica, kinds] : replicas)
        for (const char* k : {"step", "forward", "backward", "optimizer", "host_to_device"})
          QVERIFY2(kinds.count(k), qPrintable(QString("step %1 replica %2 has no device %3").arg(step).arg(replica).arg(k)));
    }
    // The step summaries name the device lanes beside the replicas'.
    const auto& lanes = summaries.back().lanes;
    for (int r = 0; r < n; ++r)
      QVERIFY(std::find(lanes.begin(), lanes.end(), "replica " + std::to_string(r) + " device") != lanes.end());
  }

  // Sampled device lanes (the default): bursts of consecutive marked steps.
  // One burst here (the period outlasts the run): its steps have their
  // device lanes, the rest none; with step graphs the unmarked steps replay
  // a graph of their own, which computes what the marked ones do.
  void device_lanes_sampled_in_bursts_data() {
    QTest::addColumn<bool>("graphs");
    QTest::newRow("step graphs") << true;
    QTest::newRow("op by op") << false;
  }
  void device_lanes_sampled_in_bursts() {
    QFETCH(bool, graphs);
    RunConfig config = synthetic_config(2);
    config.strategy.name = "one_device";
    config.strategy.devices = {"sim:0"};
    config.training.step_graphs = graphs;
    RecordingSink plain_sink;
    std::string status;
    QVERIFY(traced_run(config, plain_sink, status).empty());
    QCOMPARE(QString::fromStdString(status), QString("completed"));
    config.trace.enabled = true;
    config.trace.device_burst_steps = 5;
    config.trace.device_period_seconds = 1e9;
    RecordingSink sink;
    const std::vector<trace::Span> spans = traced_run(config, sink, status);
    QCOMPARE(QString::fromStdString(status), QString("completed"));
    std::map<int64_t, std::set<trace::SpanKind>> on_device;
    for (const trace::Span& s : spans)
      if (s.lane.kind == trace::LaneKind::Device) on_device[s.step].insert(s.kind);
    QCOMPARE(static_cast<int>(on_device.size()), 5);
    for (int64_t step = 1; step <= 5; ++step) {
      QVERIFY2(on_device.count(step), qPrintable(QString("step %1 has no device lane").arg(step)));
      for (trace::SpanKind k :
           {trace::SpanKind::Step, trace::SpanKind::Forward, trace::SpanKind::Backward, trace::SpanKind::Optimizer})
        QVERIFY(on_device[step].count(k));
    }
    // Every step still has its summary (host lanes), and the same loss.
    const auto steps = sink.all<StepEvent>(), plain_steps = plain_sink.all<StepEvent>();
    QCOMPARE(steps.size(), size_t{32});
    QCOMPARE(sink.all<StepSpansEvent>().size(), steps.size());
    QCOMPARE(steps.size(), plain_steps.size());
    for (size_t i = 0; i < steps.size(); ++i) QCOMPARE(steps[i].loss, plain_steps[i].loss);
  }

  // A sim device one replica uses computes each layer's weight and bias
  // gradients on a side branch: a second stream with its own thread, really
  // beside the input gradients, joined before the gradients are used. The
  // losses are those of the same run in order, bit for bit; replicas sharing
  // a device never branch. A captured step holds its branches (the side
  // stream joins the capture) and every replay forks and joins them again;
  // they are counted when captured, not when replayed. The MLP and the
  // TF-tutorial CNN's layers, narrowed (convolutions: im2col on the branch, patches freed in
  // its order).
  void weight_gradients_on_a_side_branch_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("graphs");
    QTest::newRow("mlp, op by op") << "mlp" << false;
    QTest::newRow("mlp, step graphs") << "mlp" << true;
    QTest::newRow("cnn, op by op") << "cnn" << false;
    QTest::newRow("cnn, step graphs") << "cnn" << true;
  }
  void weight_gradients_on_a_side_branch() {
    QFETCH(QString, model);
    QFETCH(bool, graphs);
    RunConfig config = synthetic_config(2);
    QTemporaryDir dir;
    if (model == "cnn") {
      // Small: the runs are three a row, and under ThreadSanitizer (no
      // oneDNN) each image's convolutions take milliseconds.
      config = load_project(STRATA_SOURCE_DIR "/resources/examples/fashion-cnn.strata");
      write_image_set(dir.path(), 80, config.dataset);
      // Its layers, narrower (the same ways through the device, a small part of the work).
      for (auto& layer : config.layers) {
        if (layer.contains("filters")) layer["filters"] = layer["filters"].get<int>() / 8;
        if (layer.contains("units") && layer["units"].get<int>() > 10) layer["units"] = 64;
      }
      config.dataset.validation_split = 0.25;  // 20 images to evaluate
      config.training.epochs = 1;
      // Four steps: the first op by op, the second captured, the rest replayed.
      config.training.max_steps_per_epoch = 4;
      config.training.batch_size = 4;
    }
    config.strategy.name = "one_device";
    config.strategy.devices = {"sim:0"};
    config.training.step_graphs = graphs;
    DeviceCounters& counters = backend_for(Device{DeviceKind::Sim, 0}).counters();
    auto losses_and_branches = [&](const RunConfig& c) {
      RecordingSink sink;
      const int64_t before = counters.branches;
      Trainer trainer(c, sink);
      trainer.prepare();
      const FinishedEvent result = trainer.run();
      std::vector<double> losses;
      for (const StepEvent& e : sink.all<StepEvent>()) losses.push_back(e.loss);
      return std::make_tuple(QString(status_name(result.status)), losses, counters.branches - before);
    };
    config.training.gradient_branches = false;
    const auto [plain_status, plain, no_branches] = losses_and_branches(config);
    const int64_t plain_operations = counters.graph_operations;
    config.training.gradient_branches = true;
    const auto [status, branched, branches] = losses_and_branches(config);
    QCOMPARE(plain_status, QString("completed"));
    QCOMPARE(status, QString("completed"));
    QCOMPARE(no_branches, int64_t{0});
    QVERIFY(!plain.empty());
    QCOMPARE(branched.size(), plain.size());
    for (size_t i = 0; i < plain.size(); ++i) QCOMPARE(branched[i], plain[i]);
    // A branch per layer with an input gradient (every layer but the first) and step run op by op.
    const int64_t per_step = model == "cnn" ? 3 : 1;
    const int64_t steps = static_cast<int64_t>(plain.size());
    if (graphs) QVERIFY2(branches > 0 && branches < per_step * steps, qPrintable(QString::number(branches)));
    else QCOMPARE(branches, per_step * steps);
    // The captured step's operations, as the GPU check's bench reports them:
    // with branches, each one's fork and join too (an event recorded on one
    // stream and waited for on the other, twice).
    if (graphs) {
      qInfo("%s: %lld device operations per captured step", qPrintable(model),
            static_cast<long long>(counters.graph_operations.load()));
      QVERIFY(plain_operations > 10);
      QCOMPARE(counters.graph_operations - plain_operations, 4 * per_step);
    }
    // Two replicas on one device: in order.
    config.strategy.name = "mirrored";
    config.strategy.devices = {"sim:0", "sim:0"};
    const auto [shared_status, shared_losses, shared_branches] = losses_and_branches(config);
    QCOMPARE(shared_status, QString("completed"));
    QCOMPARE(shared_branches, int64_t{0});
  }

  // --device-lanes off: the host's lanes alone (no timing marks queued).
  void device_lanes_can_be_left_out() {
    RecordingSink sink;
    RunConfig config = synthetic_config(1);
    config.strategy.name = "one_device";
    config.strategy.devices = {"sim:0"};
    config.trace.enabled = true;
    config.trace.device_lanes = trace::DeviceLanes::Off;
    std::string status;
    const std::vector<trace::Span> spans = traced_run(config, sink, status);
    QCOMPARE(QString::fromStdString(status), QString("completed"));
    int on_device = 0, on_host = 0;
    for (const trace::Span& s : spans) (s.lane.kind == trace::LaneKind::Device ? on_device : on_host) += 1;
    QCOMPARE(on_device, 0);
    QVERIFY(on_host > 0);
    QVERIFY(!sink.all<StepSpansEvent>().empty());
  }

  // A parameter-server run's workers record their pulls and pushes, each
  // round's breakdown once, after the round is reported.
  void parameter_server_workers_on_the_timeline() {
    RecordingSink sink;
    RunConfig config = synthetic_config(1);
    config.strategy.name = "parameter_server";
    config.strategy.devices = {"cpu:0", "cpu:1"};
    config.trace.enabled = true;
    Trainer trainer(config, sink);
    trainer.prepare();
    QCOMPARE(QString(status_name(trainer.run().status)), QString("completed"));
    const auto spans = sink.all<StepSpansEvent>();
    QCOMPARE(spans.size(), sink.all<StepEvent>().size());
    std::set<int64_t> steps;
    std::set<std::string> kinds;
    size_t server_updates = 0;  // rounds with the server's own lane
    for (const StepSpansEvent& s : spans) {
      QVERIFY(steps.insert(s.step).second);
      QVERIFY(!s.lanes.empty() && s.lanes.front().rfind("worker ", 0) == 0);
      QVERIFY(s.step_ms.front() > 0);
      kinds.insert(s.kinds.begin(), s.kinds.end());
      server_updates += std::find(s.lanes.begin(), s.lanes.end(), "server 0") != s.lanes.end();
    }
    // (An in-process pull can take under half a microsecond: nothing there in that round.)
    QVERIFY(kinds.count("pull") && kinds.count("push"));
    // The server's updates, each on its lane in the round whose push it applied.
    QVERIFY(kinds.count("optimizer"));
    QVERIFY2(server_updates * 2 >= spans.size(),
             qPrintable(QString("%1 of %2 rounds").arg(server_updates).arg(spans.size())));
  }

  void max_steps_and_validation_split() {
    RecordingSink sink;
    RunConfig config = synthetic_config(2);
    config.training.max_steps_per_epoch = 3;
    config.dataset.validation_split = 0.25;
    config.training.drop_remainder = true;
    config.training.batch_size = 64;
    Trainer trainer(config, sink);
    FinishedEvent fin = trainer.run();  // run() prepares on demand
    QCOMPARE(QString(status_name(fin.status)), QString("completed"));
    QCOMPARE(fin.steps, int64_t{6});
    auto started = std::get<RunStartedEvent>(sink.events.front());
    QCOMPARE(started.steps_per_epoch, int64_t{3});
    QCOMPARE(started.train_examples, int64_t{600});  // 800 train, the last quarter held out
    QCOMPARE(started.validation_examples, int64_t{200});
    QCOMPARE(sink.all<EpochEvent>().size(), size_t(2));
  }

  void same_seed_same_run() {
    auto losses = [] {
      RecordingSink sink;
      RunConfig config = synthetic_config(2);
      config.layers.insert(config.layers.begin() + 1, json{{"type", "dropout"}, {"rate", 0.2}});
      Trainer trainer(config, sink);
      trainer.run();
      std::vector<double> out;
      for (auto& s : sink.all<StepEvent>()) out.push_back(s.loss);
      return out;
    };
    auto a = losses(), b = losses();
    QVERIFY(!a.empty());
    STRATA_COMPARE_OK(testutil::identical(a, b, "step losses of two runs with the same seed"));
  }

  // Synchronised batch normalisation over mirrored replicas normalises with
  // the global batch's statistics: the run equals one device's on the same
  // global batches, step by step (so the differential tests of batch
  // normalisation against PyTorch, tests/torch, cover it too). Unsynchronised,
  // each replica uses its own half and the runs differ.
  // A relu after the batch norm takes the fused path (the relu in its passes).
  void synchronized_batch_norm_equals_one_device_data() {
    QTest::addColumn<QString>("activation");
    QTest::newRow("tanh") << "tanh";
    QTest::newRow("relu") << "relu";
  }
  void synchronized_batch_norm_equals_one_device() {
    QFETCH(QString, activation);
    auto run = [&](const char* strategy, std::vector<std::string> devices, bool sync) {
      RunConfig c = synthetic_config(2);
      c.layers = {json{{"type", "dense"}, {"units", 16}, {"use_bias", false}},
                  json{{"type", "batch_normalization"}, {"synchronized", sync}, {"momentum", 0.9}},
                  json{{"type", activation.toStdString()}}, json{{"type", "dense"}, {"units", 4}}};
      c.strategy.name = strategy;
      c.strategy.devices = std::move(devices);
      RecordingSink sink;
      Trainer t(c, sink);
      t.run();
      std::vector<double> losses;
      for (auto& s : sink.all<StepEvent>()) losses.push_back(s.loss);
      return losses;
    };
    const auto one = run("one_device", {"cpu:0"}, true);
    const auto synced = run("mirrored", {"cpu:0", "cpu:1"}, true);
    const auto local = run("mirrored", {"cpu:0", "cpu:1"}, false);
    QCOMPARE(synced.size(), one.size());
    double worst = 0, local_worst = 0;
    for (size_t i = 0; i < one.size(); ++i) {
      worst = std::max(worst, std::abs(synced[i] - one[i]) / std::abs(one[i]));
      local_worst = std::max(local_worst, std::abs(local[i] - one[i]) / std::abs(one[i]));
    }
    QVERIFY2(worst < 1e-5, qPrintable(QString("synchronised: relative difference %1").arg(worst)));
    QVERIFY2(local_worst > 1e-4, qPrintable(QString("per-replica statistics: relative difference %1").arg(local_worst)));
  }

  void stop_from_another_thread() {
    RecordingSink sink;
    RunConfig config = synthetic_config(1000);  // far longer than the test lets it run
    Trainer trainer(config, sink);
    trainer.prepare();
    std::thread stopper([&] {
      sink.wait_for_steps(5);
      trainer.request_stop();
    });
    FinishedEvent fin = trainer.run();
    stopper.join();
    QCOMPARE(QString(status_name(fin.status)), QString("stopped"));
    QVERIFY(fin.steps >= 5);
    QVERIFY(fin.steps < int64_t{1000} * 16);
    QVERIFY2(fin.message.find("stopped") != std::string::npos, fin.message.c_str());
    QVERIFY(std::holds_alternative<FinishedEvent>(sink.events.back()));
    QCOMPARE(std::string(status_name(std::get<FinishedEvent>(sink.events.back()).status)), std::string("stopped"));
    // It stopped between steps: every step event made it out, in order.
    auto steps = sink.all<StepEvent>();
    QCOMPARE(int64_t(steps.size()), fin.steps);
    QCOMPARE(steps.back().step, fin.steps);
  }

  // A stop requested during an epoch's last step takes effect between
  // epochs: the message names the epoch that ended, as the progress bar
  // (the last step's epoch) does. Mid-epoch it names the step and its epoch.
  void stop_message_names_the_last_steps_epoch() {
    struct StopAt final : EventSink {
      Trainer* trainer = nullptr;
      int64_t at_epoch_step = 0;  // 0: the epoch's last step
      int64_t steps_per_epoch = 0;
      void emit(const Event& e) override {
        if (auto* r = std::get_if<RunStartedEvent>(&e)) steps_per_epoch = r->steps_per_epoch;
        if (auto* s = std::get_if<StepEvent>(&e); s && s->epoch == 2 &&
                                                   s->epoch_step == (at_epoch_step ? at_epoch_step : steps_per_epoch))
          trainer->request_stop();
      }
    };
    for (int64_t at : {int64_t{0}, int64_t{3}}) {
      StopAt sink;
      sink.at_epoch_step = at;
      Trainer trainer(synthetic_config(10), sink);
      sink.trainer = &trainer;
      const FinishedEvent fin = trainer.run();
      QCOMPARE(QString(status_name(fin.status)), QString("stopped"));
      const std::string want = at == 0 ? "stopped by request after epoch 2 (step " + std::to_string(fin.steps) + ")"
                                       : "stopped by request after step " + std::to_string(fin.steps) + " (epoch 2)";
      QCOMPARE(fin.message, want);
    }
  }

  // On accelerators, steps have their figures read one step late (the host
  // queues step k + 1 before it reads step k): replayed as a graph, also
  // when traced (two graphs alternate, each with its own timing marks), and
  // op by op on replicas of different devices. With read_late off each step
  // is read as it ends, so that run is the step-by-step reference: the same
  // events, the same checkpoints (a checkpoint waits for the step in
  // flight), the same final weights; and a stop from another thread still
  // reports every step it ran, the last one saved.
  void steps_read_one_late_equal_the_synchronous_run_data() {
    QTest::addColumn<QStringList>("devices");
    QTest::newRow("one device, step graphs") << QStringList{"sim:0"};
    QTest::newRow("mirrored on two devices, op by op") << QStringList{"sim:0", "sim:1"};
  }
  void steps_read_one_late_equal_the_synchronous_run() {
    QFETCH(QStringList, devices);
    const bool graphs = devices.size() == 1;
    struct Result {
      std::vector<StepEvent> steps;
      FinishedEvent fin;
      std::vector<std::vector<float>> weights;
      bool captured = false;  // the run said its steps were captured as a graph
    };
    QTemporaryDir tmp;
    // How many step events came out while the optimizer had already run
    // the step after (queued before this step's figures were read).
    struct AheadSink final : EventSink {
      RecordingSink record;
      Trainer* trainer = nullptr;
      int ahead = 0;
      void emit(const Event& e) override {
        if (auto* s = std::get_if<StepEvent>(&e)) ahead += trainer->optimizer().iterations() > s->step;
        record.emit(e);
      }
    };
    enum Mode { Late, Traced, Synchronous };
    int ahead[3] = {0, 0, 0};
    auto run = [&](Mode mode, const std::string& dir, int64_t stop_after) {
      AheadSink ahead_sink;
      RecordingSink& sink = ahead_sink.record;
      RunConfig c = synthetic_config(3);
      c.strategy.name = graphs ? "one_device" : "mirrored";
      c.strategy.devices.clear();
      for (const QString& d : devices) c.strategy.devices.push_back(d.toStdString());
      c.trace.enabled = mode == Traced;
      c.training.read_late = mode != Synchronous;
      c.training.checkpoint.every_steps = 7;
      c.training.checkpoint.keep = 100;
      Trainer trainer(c, ahead_sink);
      ahead_sink.trainer = &trainer;
      trainer.prepare();
      trainer.enable_checkpoints(dir);
      std::thread stopper;
      if (stop_after > 0)
        stopper = std::thread([&] {
          sink.wait_for_steps(stop_after);
          trainer.request_stop();
        });
      Result r;
      r.fin = trainer.run();
      if (stopper.joinable()) stopper.join();
      r.steps = sink.all<StepEvent>();
      for (Variable* v : trainer.model().trainable_variables()) r.weights.push_back(v->value().to(Device{}).values());
      for (const LogEvent& log : sink.all<LogEvent>())
        r.captured |= log.message.find("captured as a graph") != std::string::npos;
      ahead[mode] = ahead_sink.ahead;
      return r;
    };
    const std::string dir = tmp.path().toStdString();
    const std::string synchronous = dir + "/sync";
    const Result b = run(Synchronous, synchronous, 0);
    QCOMPARE(b.captured, graphs);
    for (Mode mode : {Late, Traced}) {
      const std::string late = dir + (mode == Late ? "/late" : "/traced");
      const Result a = run(mode, late, 0);
      QCOMPARE(a.captured, graphs);
      QCOMPARE(QString(status_name(a.fin.status)), QString("completed"));
      QCOMPARE(a.steps.size(), size_t{48});
      QCOMPARE(a.steps.size(), b.steps.size());
      // Read late: every step but the 6 a checkpoint is written after
      // (7, 14, ..., 42) and the 3 that end an epoch; with read_late off: none.
      QCOMPARE(ahead[mode], 48 - 6 - 3);
      for (size_t i = 0; i < a.steps.size(); ++i) {
        QCOMPARE(a.steps[i].step, static_cast<int64_t>(i + 1));
        QCOMPARE(a.steps[i].epoch_step, b.steps[i].epoch_step);
        QCOMPARE(a.steps[i].loss, b.steps[i].loss);
        QCOMPARE(a.steps[i].accuracy, b.steps[i].accuracy);
        QCOMPARE(a.steps[i].lr, b.steps[i].lr);
        QCOMPARE(a.steps[i].replica_losses, b.steps[i].replica_losses);
      }
      QVERIFY(a.weights == b.weights);
      // Every checkpoint holds the model after its own step, not the step in flight.
      for (int64_t step : {7, 14, 21, 42}) {
        const std::string name = "/ckpt-" + std::to_string(step) + "/model.safetensors";
        QVERIFY2(QFile::exists(QString::fromStdString(late + name)), (late + name).c_str());
        QFile x(QString::fromStdString(late + name)), y(QString::fromStdString(synchronous + name));
        QVERIFY(x.open(QIODevice::ReadOnly) && y.open(QIODevice::ReadOnly));
        QVERIFY2(x.readAll() == y.readAll(), name.c_str());
      }
    }
    QCOMPARE(ahead[Synchronous], 0);

    const Result stopped = run(Late, dir + "/stopped", 10);
    QCOMPARE(stopped.captured, graphs);
    QCOMPARE(QString(status_name(stopped.fin.status)), QString("stopped"));
    QCOMPARE(static_cast<int64_t>(stopped.steps.size()), stopped.fin.steps);
    QCOMPARE(stopped.steps.back().step, stopped.fin.steps);
    for (size_t i = 0; i < stopped.steps.size(); ++i) QCOMPARE(stopped.steps[i].loss, b.steps[i].loss);
  }

  void more_threads_than_cpus_warns() {
    // Asked for explicitly, more threads than logical CPUs are said to slow
    // the run; the default (0: every core) and a fitting count say nothing.
    auto warnings = [](int threads) {
      RecordingSink sink;
      RunConfig c = synthetic_config(1);
      c.training.max_steps_per_epoch = 2;
      c.training.threads = threads;
      Trainer trainer(c, sink);
      trainer.prepare();
      std::vector<std::string> out;
      if (trainer.run().status != RunStatus::Completed) out.push_back("the run did not complete");
      for (const LogEvent& l : sink.all<LogEvent>())
        if (l.level == "warning") out.push_back(l.message);
      return out;
    };
    const int cpus = hardware_threads();
    const auto over = warnings(cpus + 1);
    QCOMPARE(over.size(), size_t{1});
    QVERIFY2(over[0].find(std::to_string(cpus + 1) + " compute threads on " + std::to_string(cpus) + " logical CPUs") !=
                 std::string::npos,
             over[0].c_str());
    QVERIFY(warnings(0).empty());
    QVERIFY(warnings(1).empty());
  }

  void stop_before_run() {
    RecordingSink sink;
    Trainer trainer(synthetic_config(3), sink);
    trainer.prepare();
    trainer.request_stop();
    FinishedEvent fin = trainer.run();
    QCOMPARE(QString(status_name(fin.status)), QString("stopped"));
    QCOMPARE(fin.steps, int64_t{0});
    QCOMPARE(fin.epochs_completed, 0);
  }

  void nan_divergence_fails_naming_the_step() {
    RecordingSink sink;
    RunConfig config = synthetic_config(3);
    config.training.optimizer.type = "sgd";
    config.training.optimizer.learning_rate = 1e30f;
    Trainer trainer(config, sink);
    FinishedEvent fin = trainer.run();
    QCOMPARE(QString(status_name(fin.status)), QString("failed"));
    QVERIFY(fin.failure == FailureKind::Diverged);  // typed: no front end reads the message for it
    QVERIFY(fin.steps >= 1);
    QVERIFY2(fin.message.find("NaN") != std::string::npos || fin.message.find("infinite") != std::string::npos, fin.message.c_str());
    QVERIFY2(fin.message.find("step " + std::to_string(fin.steps)) != std::string::npos, fin.message.c_str());
    // The last step is the non-finite one, and the run ended right there.
    auto steps = sink.all<StepEvent>();
    QCOMPARE(steps.back().step, fin.steps);
    QVERIFY(!std::isfinite(steps.back().loss));
    for (size_t i = 0; i + 1 < steps.size(); ++i) QVERIFY(std::isfinite(steps[i].loss));
    QVERIFY(std::holds_alternative<FinishedEvent>(sink.events.back()));
    // An error log line precedes the finished event.
    auto logs = sink.all<LogEvent>();
    QVERIFY(!logs.empty());
    QCOMPARE(QString::fromStdString(logs.back().level), QString("error"));
  }

  // fail_replica (strata-run --fail-replica): a replica that fails while its
  // peers go on into the step's collectives ends the run as failed, naming
  // it, rather than leaving the peers waiting; with step graphs, beside the
  // graphs captured before (the case NCCL's captured communicators need).
  // The devices work for the next run.
  void a_failing_replica_fails_the_run_naming_it_data() {
    QTest::addColumn<QStringList>("devices");
    QTest::addColumn<bool>("graphs");
    QTest::newRow("cpu:0,cpu:1") << QStringList{"cpu:0", "cpu:1"} << false;
    QTest::newRow("sim:0 x2, step graphs") << QStringList{"sim:0", "sim:0"} << true;
    QTest::newRow("sim:0,sim:1, read late") << QStringList{"sim:0", "sim:1"} << false;
  }
  void a_failing_replica_fails_the_run_naming_it() {
    QFETCH(QStringList, devices);
    QFETCH(bool, graphs);
    RunConfig config = synthetic_config(1);
    config.strategy.name = "mirrored";
    config.strategy.devices.clear();
    for (const QString& d : devices) config.strategy.devices.push_back(d.toStdString());
    config.training.step_graphs = graphs;
    config.strategy.fail_replica = 1;
    config.strategy.fail_replica_step = 6;
    RecordingSink sink;
    FinishedEvent fin;
    {
      Trainer trainer(config, sink);
      fin = trainer.run();
    }
    QCOMPARE(QString(status_name(fin.status)), QString("failed"));
    const std::string want = "replica 1 (" + config.strategy.devices[1] + ") failed (injected at step 6)";
    QVERIFY2(fin.message.find(want) != std::string::npos, fin.message.c_str());
    // The steps before it were trained and reported (read late: up to the one before).
    const auto steps = sink.all<StepEvent>();
    QVERIFY2(steps.size() >= 4 && steps.size() <= 5, qPrintable(QString::number(steps.size())));
    if (graphs) {
      bool captured = false;
      for (const LogEvent& l : sink.all<LogEvent>())
        captured = captured || l.message.find("captured as a graph") != std::string::npos;
      QVERIFY(captured);
    }
    // Out of range, refused before anything runs.
    config.strategy.fail_replica = 2;
    RecordingSink refused_sink;
    Trainer refused(config, refused_sink);
    STRATA_EXPECT_ERROR(refused.prepare(), ErrorKind::BadInput, "fail_replica: replica 2 does not exist (2 replicas)");
    config.strategy.fail_replica = 1;
    config.strategy.fail_replica_step = 0;
    Trainer never(config, refused_sink);
    STRATA_EXPECT_ERROR(never.prepare(), ErrorKind::BadInput, "fail_replica_step", "counts from 1, got 0");
    // The same devices train the next run to its end.
    config.strategy.fail_replica = -1;
    RecordingSink next_sink;
    Trainer next(config, next_sink);
    QCOMPARE(QString(status_name(next.run().status)), QString("completed"));
  }

  void no_full_batch_caught_by_prepare() {
    // 800 training examples, batch 1000, drop_remainder: not one step. The
    // Trainer promises bad input from prepare(), before anything runs.
    RecordingSink sink;
    RunConfig c = synthetic_config(1);
    c.training.batch_size = 1000;
    c.training.drop_remainder = true;
    Trainer trainer(c, sink);
    STRATA_EXPECT_ERROR(trainer.prepare(), ErrorKind::BadInput, "no full batch");
    QVERIFY(sink.events.empty());
  }

  void bad_input_in_prepare_data() {
    QTest::addColumn<QString>("what");
    QTest::addColumn<QString>("expected");
    QTest::newRow("unknown strategy") << "strategy" << "warp_drive";
    QTest::newRow("device out of range") << "device" << "cpu:99";
    QTest::newRow("duplicate devices") << "duplicate" << "listed twice";
    QTest::newRow("too few outputs") << "outputs" << "4 classes";
    QTest::newRow("missing idx file") << "idx" << "/nonexistent/strata/train-images";
    QTest::newRow("unknown loss") << "loss" << "mean_absolute_error";
    QTest::newRow("batch smaller than replicas") << "batch" << "replicas";
    QTest::newRow("dense on images without flatten") << "shape" << "Flatten";
  }
  void bad_input_in_prepare() {
    QFETCH(QString, what);
    QFETCH(QString, expected);
    RunConfig c = synthetic_config(1);
    if (what == "strategy") c.strategy.name = "warp_drive";
    if (what == "device") c.strategy.devices = {"cpu:99"};
    if (what == "duplicate") {
      c.strategy.name = "mirrored";
      c.strategy.devices = {"cpu:0", "cpu:0"};
    }
    if (what == "outputs") c.layers.back()["units"] = 2;
    if (what == "idx") {
      c.dataset.kind = "idx";
      c.dataset.train_images = "/nonexistent/strata/train-images";
      c.dataset.train_labels = "/nonexistent/strata/train-labels";
    }
    if (what == "loss") c.training.loss = "mean_absolute_error";
    if (what == "batch") {
      c.strategy.name = "mirrored";
      c.strategy.devices = {"cpu:0", "cpu:1", "cpu:2"};
      c.training.batch_size = 2;
    }
    RecordingSink sink;
    QTemporaryDir dir;
    // Images (28, 28, 1) into a Dense layer: a shape error naming the layer.
    if (what == "shape") write_image_set(dir.path(), 100, c.dataset);
    Trainer trainer(c, sink);
    STRATA_EXPECT_ERROR(trainer.prepare(), ErrorKind::BadInput, expected.toStdString());
    QVERIFY(sink.events.empty());  // nothing was emitted before the problem surfaced
  }
};

QTEST_GUILESS_MAIN(TestTrainer)
#include "test_trainer.moc"
