// ParameterServerStrategy: the shard plan, the coordinator's staleness bound,
// equivalence with Mirrored when synchronous (k = 0), lost workers, a failed
// server with resume from a checkpoint, bad settings. (The accuracy of
// full Fashion-MNIST runs: test_fashion_accuracy, label slow.)
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/DeviceMemory.h"
#include "distribute/Strategies.h"
#include "distribute/collectives/HostGradients.h"
#include "distribute/parameter_server/ClusterCoordinator.h"
#include "distribute/parameter_server/LocalParameterStore.h"
#include "distribute/parameter_server/ParameterServerStrategy.h"
#include "engine/RecordingSink.h"
#include "nn/Dense.h"
#include "nn/GradientTape.h"
#include "nn/Loss.h"
#include "nn/Optimizer.h"
#include "project/ProjectFile.h"
#include "train/Trainer.h"

using namespace strata;
using nlohmann::json;

namespace {

RunConfig synthetic(const std::string& strategy, std::vector<std::string> devices, int epochs = 3) {
  json j = json::parse(R"({
    "format": "strata-project", "version": 1, "name": "ps-test",
    "dataset": {"kind": "synthetic", "synthetic_examples": 1000, "synthetic_features": 16, "synthetic_classes": 4},
    "model": {"layers": [{"type": "dense", "units": 32, "activation": "relu"}, {"type": "dense", "units": 4}]},
    "training": {"epochs": 3, "batch_size": 48, "optimizer": {"type": "adam", "learning_rate": 0.01}, "seed": 7, "threads": 2},
    "strategy": {"name": "one_device"}
  })");
  j["training"]["epochs"] = epochs;
  j["strategy"]["name"] = strategy;
  j["strategy"]["devices"] = devices;
  return project_from_json(j);
}

// Worker devices: cpu, or the simulated accelerator when CTest runs this
// test as test_parameter_server_sim (STRATA_TEST_DEVICES=sim).
std::string device_kind() {
  const char* env = std::getenv("STRATA_TEST_DEVICES");
  return env && std::string(env) == "sim" ? "sim" : "cpu";
}
std::vector<std::string> cpus(int n) {
  std::vector<std::string> d;
  for (int i = 0; i < n; ++i) d.push_back(device_kind() + ":" + std::to_string(i));
  return d;
}


double relative_difference(nn::Sequential& a, nn::Sequential& b) {
  double diff = 0, norm = 0;
  auto va = a.variables(), vb = b.variables();
  for (size_t i = 0; i < va.size(); ++i) {
    const auto ha = va[i]->component(0).values(), hb = vb[i]->component(0).values();
    for (size_t k = 0; k < ha.size(); ++k) {
      const double x = ha[k], y = hb[k];
      diff += (x - y) * (x - y);
      norm += x * x;
    }
  }
  return std::sqrt(diff / norm);
}

int64_t steps_per_epoch(const RecordingSink& sink) { return sink.all<RunStartedEvent>().front().steps_per_epoch; }

// Slices finished by all workers, per the last step event.
int64_t total_slices(const RecordingSink& sink) {
  const auto steps = sink.all<StepEvent>();  // a copy: it must outlive the loop
  int64_t n = 0;
  for (auto s : steps.back().worker_steps) n += s;
  return n;
}

int max_staleness(const RecordingSink& sink) {
  int m = -1;
  for (auto& s : sink.all<StepEvent>()) {
    if (!s.staleness) return -2;  // every parameter-server step must carry it
    m = std::max(m, *s.staleness);
  }
  return m;
}

template <typename F>
QString error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestParameterServer : public QObject {
  Q_OBJECT

private slots:
  void gradients_reach_the_host_in_one_wait() {
    // A GPU worker's push: every device gradient copied to the host with a
    // single synchronisation of its device; host gradients read in place.
    const Device sim{DeviceKind::Sim, 1};
    std::vector<Tensor> grads{Tensor::from(Shape{3}, std::vector<float>{1, 2, 3}, sim),
                              Tensor::from(Shape{2}, std::vector<float>{4, 5}),
                              Tensor::from(Shape{2, 2}, std::vector<float>{6, 7, 8, 9}, sim)};
    HostGradients host;
    for (int round = 0; round < 2; ++round) {
      const int64_t syncs = device_memory(sim).counters().syncs;
      const auto& views = host.gather(grads);
      QCOMPARE(device_memory(sim).counters().syncs.load() - syncs, int64_t{1});
      QCOMPARE(views.size(), size_t{3});
      QCOMPARE(std::vector<float>(views[0], views[0] + 3), (std::vector<float>{1, 2, 3}));
      QVERIFY(views[1] == grads[1].data());
      QCOMPARE(std::vector<float>(views[2], views[2] + 4), (std::vector<float>{6, 7, 8, 9}));
    }
  }

  void shard_plan_covers_every_element() {
    Variable a("a", Tensor::zeros(Shape{100, 40})), b("b", Tensor::zeros(Shape{40})), c("c", Tensor::zeros(Shape{40, 10})),
        d("d", Tensor::zeros(Shape{10}));
    std::vector<Variable*> vars{&a, &b, &c, &d};
    for (int servers : {1, 2, 3}) {
      for (int64_t min_bytes : {int64_t{0}, int64_t{400}, int64_t{4000}}) {
        if (min_bytes == 0 && servers > 4) continue;
        ShardPlan plan = ShardPlan::make(vars, servers, min_bytes);
        QCOMPARE(plan.num_servers(), servers);
        // Every element of every variable is held by exactly one server.
        std::vector<std::vector<int>> held;
        for (auto* v : vars) held.emplace_back(static_cast<size_t>(v->shape().numel()), 0);
        for (int s = 0; s < servers; ++s) {
          QVERIFY2(!plan.pieces(s).empty(), "a server without variables");
          for (auto& p : plan.pieces(s))
            for (int64_t i = p.offset; i < p.offset + p.count; ++i) held[static_cast<size_t>(p.variable)][static_cast<size_t>(i)]++;
        }
        for (auto& h : held)
          for (int n : h) QCOMPARE(n, 1);
      }
    }
    // Round-robin keeps variables whole; splitting spreads the big kernel.
    ShardPlan whole = ShardPlan::make(vars, 2, 0);
    QCOMPARE(whole.pieces(0).size(), size_t{2});
    QCOMPARE(whole.elements(0), int64_t{4000 + 400});
    ShardPlan split = ShardPlan::make(vars, 2, 400);
    QVERIFY(std::abs(split.elements(0) - split.elements(1)) <= 400);
    QVERIFY(QString::fromStdString(split.describe(vars)).contains("a[0:2000]"));
  }

  void masters_own_their_memory() {
    // The servers' master weights are their own memory: an update applied
    // to a master must not change worker 0's copy mid-step (it did when the
    // master was built on worker 0's buffer, a race TSan reported); worker 0
    // sees it only when it pulls.
    VariableComponentsScope workers({Device{DeviceKind::Cpu, 0}, Device{DeviceKind::Cpu, 1}});
    Variable w("w", Tensor::full(Shape{8}, 1.0f));
    nn::SGD sgd(0.5f);
    LocalParameterStore store({&w}, ShardPlan::make({&w}, 1, 0), sgd);
    QVERIFY(store.masters()[0]->component(0).ptr() != w.component(0).ptr());
    const std::vector<float> grad(8, 1.0f);
    store.push_shard(0, grad.data(), 0, 0);
    QCOMPARE(store.masters()[0]->component(0).values(), std::vector<float>(8, 0.5f));
    QCOMPARE(w.component(0).values(), std::vector<float>(8, 1.0f));
    store.copy_to_model();
    QCOMPARE(w.component(0).values(), std::vector<float>(8, 0.5f));
  }

  void bad_settings_are_clear_errors() {
    StrategyOptions zero;
    zero.parameter_server.servers = 0;
    QVERIFY(error_of([&] { make_strategy("parameter_server", zero); }).contains("at least one parameter server"));
    StrategyOptions negative;
    negative.parameter_server.staleness = -1;
    QVERIFY(error_of([&] { make_strategy("parameter_server", negative); }).contains("staleness bound must be 0"));

    // 4 variables, round-robin: 5 servers cannot all hold one.
    RunConfig too_many = synthetic("parameter_server", cpus(2));
    too_many.strategy.servers = 5;
    NullSink sink;
    const QString many = error_of([&] { Trainer(too_many, sink).prepare(); });
    QVERIFY2(many.contains("5 servers but the model has only 4 variables"), qPrintable(many));
    too_many.strategy.min_shard_bytes = 1 << 20;  // no variable is that big: 4 pieces
    QVERIFY(error_of([&] { Trainer(too_many, sink).prepare(); }).contains("give only 4 pieces"));

    // The project file names the field.
    json j = json::parse(R"({"format": "strata-project", "version": 1, "dataset": {"kind": "synthetic"},
      "model": {"layers": [{"type": "dense", "units": 4}]},
      "strategy": {"name": "parameter_server", "servers": 0, "staleness": -2}})");
    const auto problems = validate_project(j);
    QString all;
    for (auto& p : problems) all += QString::fromStdString(p) + "\n";
    QVERIFY2(all.contains("strategy.servers: must be a positive integer, got 0"), qPrintable(all));
    QVERIFY2(all.contains("strategy.staleness: must be 0 (synchronous)"), qPrintable(all));

    RunConfig straggler = synthetic("mirrored", cpus(2));
    straggler.strategy.straggler = 2;
    QVERIFY(error_of([&] { Trainer(straggler, sink).prepare(); }).contains("replica 2 does not exist"));
  }

  // k = 0: each global batch's slice gradients are summed (weighted by slice
  // size) and applied once, exactly what Mirrored does, so the losses match
  // step by step. 3 workers, batch 48 and a partial last batch of 40 give
  // uneven slices.
  void synchronous_matches_mirrored() {
    RecordingSink ms, ps;
    RunConfig mc = synthetic("mirrored", cpus(3));
    RunConfig pc = synthetic("parameter_server", cpus(3));
    pc.strategy.staleness = 0;
    pc.strategy.servers = 2;
    pc.strategy.min_shard_bytes = 256;  // split the kernels too
    Trainer mirrored(mc, ms), server(pc, ps);
    QCOMPARE(QString(status_name(mirrored.run().status)), QString("completed"));
    QCOMPARE(QString(status_name(server.run().status)), QString("completed"));
    const auto a = ms.all<StepEvent>(), b = ps.all<StepEvent>();
    QCOMPARE(b.size(), a.size());
    QCOMPARE(static_cast<int64_t>(a.size()), 3 * steps_per_epoch(ms));
    for (size_t i = 0; i < a.size(); ++i) {
      QVERIFY2(std::abs(a[i].loss - b[i].loss) <= 1e-5 * std::max(1.0, std::abs(a[i].loss)),
               qPrintable(QString("step %1: mirrored %2, parameter_server %3").arg(i + 1).arg(a[i].loss).arg(b[i].loss)));
      QCOMPARE(*b[i].staleness, 0);
    }
    const double diff = relative_difference(mirrored.model(), server.model());
    QVERIFY2(diff < 1e-5, qPrintable(QString::number(diff)));
  }

  // A straggler makes the others run ahead; the bound stops them at k rounds.
  void staleness_bound_is_never_exceeded_data() {
    QTest::addColumn<int>("bound");
    QTest::newRow("k=1") << 1;
    QTest::newRow("k=2") << 2;
    QTest::newRow("unbounded") << -1;
  }
  void staleness_bound_is_never_exceeded() {
    QFETCH(int, bound);
    RecordingSink sink;
    RunConfig c = synthetic("parameter_server", cpus(3), 2);
    c.strategy.staleness = bound;
    c.strategy.straggler = 0;
    c.strategy.slowdown = 30;
    Trainer trainer(c, sink);
    QCOMPARE(QString(status_name(trainer.run().status)), QString("completed"));
    const int m = max_staleness(sink);
    QVERIFY2(m >= 0, "a step event without staleness");
    if (bound >= 0) QVERIFY2(m <= bound, qPrintable(QString("max staleness %1 > bound %2").arg(m).arg(bound)));
    else QVERIFY2(m > 2, qPrintable(QString("unbounded, a 30x straggler, yet max staleness only %1").arg(m)));
    // The straggler did fewer slices than the others, and nothing was lost.
    const auto last = sink.all<StepEvent>().back();
    QCOMPARE(last.worker_steps.size(), size_t{3});
    QVERIFY(last.worker_steps[0] < last.worker_steps[1]);
    QCOMPARE(total_slices(sink), 2 * steps_per_epoch(sink) * 3);
    QCOMPARE(static_cast<int64_t>(sink.all<StepEvent>().size()), 2 * steps_per_epoch(sink));
  }

  void lost_worker_does_not_stop_training_data() {
    QTest::addColumn<int>("bound");
    QTest::newRow("asynchronous") << -1;
    QTest::newRow("synchronous") << 0;
  }
  void lost_worker_does_not_stop_training() {
    QFETCH(int, bound);
    RecordingSink sink;
    RunConfig c = synthetic("parameter_server", cpus(3), 4);
    c.strategy.staleness = bound;
    c.strategy.fail_worker = 1;
    c.strategy.fail_worker_step = 5;
    Trainer trainer(c, sink);
    FinishedEvent fin = trainer.run();
    QCOMPARE(QString(status_name(fin.status)), QString("completed"));
    QCOMPARE(fin.steps, 4 * steps_per_epoch(sink));
    bool warned = false;
    for (auto& l : sink.all<LogEvent>())
      warned = warned || (l.level == "warning" && l.message.find("worker 1 (" + device_kind() + ":1) lost") != std::string::npos);
    QVERIFY(warned);
    const auto steps = sink.all<StepEvent>();
    QCOMPARE(steps.back().lost_workers, std::vector<int>{1});
    QCOMPARE(steps.back().worker_steps[1], int64_t{4});  // it finished 4 slices before failing
    QCOMPARE(total_slices(sink), 4 * steps_per_epoch(sink) * 3);  // its slice was redone, none lost
    const auto epochs = sink.all<EpochEvent>();
    QVERIFY2(*epochs.back().val_accuracy > 0.8, qPrintable(QString::number(*epochs.back().val_accuracy)));
  }

  // The coordinator API itself (as a library user would call it): when every
  // worker fails, the run cannot go on and says so.
  void all_workers_lost_is_an_error() {
    StrategyOptions o;
    o.devices = {Device::parse(cpus(2)[0]), Device::parse(cpus(2)[1])};
    ParameterServerStrategy strategy(o.devices, o);
    std::unique_ptr<nn::Sequential> model;
    nn::SGD sgd(0.1f);
    {
      auto scope = strategy.scope();
      model = std::make_unique<nn::Sequential>();
      model->add(nn::Dense(3));
      model->build(Shape{4});
    }
    auto vars = model->trainable_variables();
    strategy.place(vars, sgd);
    nn::SparseCategoricalCrossentropy loss(true, nn::Reduction::None);
    ClusterCoordinator coordinator(strategy, [&](int, const Batch& in) -> WorkerStep {
      GradientTape tape;
      Tensor logits = (*model)(in.features, true, tape);
      Tensor l = nn::compute_average_loss(loss(in.labels, logits), in.size());
      return WorkerStep{tape.gradient(l, vars), l.to(Device{}).item(), 0};
    });
    std::vector<int32_t> labels{0, 1, 2, 0, 1, 2, 0, 1};
    Batch global{Tensor::full(Shape{8, 4}, 0.5f), Tensor::from_ints(Shape{8}, labels), 8};
    coordinator.start();
    coordinator.schedule(1, split_batch(global, 2, strategy.devices()));
    coordinator.join();
    QCOMPARE(coordinator.take_results().size(), size_t{2});
    QCOMPARE(strategy.store().updates(), int64_t{2});
    coordinator.fail_worker_at(0, 2);
    coordinator.fail_worker_at(1, 2);
    coordinator.start();
    const QString err = error_of([&] {
      coordinator.schedule(2, split_batch(global, 2, strategy.devices()));
      coordinator.join();
    });
    QVERIFY2(err.contains("all 2 workers were lost"), qPrintable(err));
    QCOMPARE(coordinator.take_lost().size(), size_t{2});
  }

  // A failed server ends the run with its name; the run resumes from the
  // last checkpoint and completes.
  void failed_server_fails_run_and_resumes() {
    QTemporaryDir dir;
    RecordingSink first;
    RunConfig c = synthetic("parameter_server", cpus(2), 2);
    c.strategy.servers = 2;
    c.training.checkpoint.every_steps = 10;
    c.strategy.fail_server = 1;
    c.strategy.fail_server_update = 25;
    Trainer failing(c, first);
    failing.prepare();
    failing.enable_checkpoints(dir.path().toStdString());
    FinishedEvent fin = failing.run();
    QCOMPARE(QString(status_name(fin.status)), QString("failed"));
    QVERIFY(fin.failure == FailureKind::ServerFailed);
    QVERIFY2(QString::fromStdString(fin.message).contains("parameter server 1 failed"), fin.message.c_str());

    c.strategy.fail_server = -1;
    RecordingSink second;
    Trainer resumed(c, second);
    resumed.prepare();
    resumed.enable_checkpoints(dir.path().toStdString());
    CheckpointInfo info = resumed.restore(*CheckpointManager::latest(dir.path().toStdString()));
    QCOMPARE(info.position.step, int64_t{10});
    FinishedEvent done = resumed.run();
    QCOMPARE(QString(status_name(done.status)), QString("completed"));
    QCOMPARE(done.steps, 2 * steps_per_epoch(second));
    QCOMPARE(second.all<StepEvent>().front().step, int64_t{11});
  }
};

QTEST_GUILESS_MAIN(TestParameterServer)
#include "test_parameter_server.moc"
