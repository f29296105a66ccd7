// Strategies against OneDevice on the same global batches, replica
// consistency, collectives, data distribution and bad configurations.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "StrategyTestUtil.h"
#include "backend/Backend.h"
#include "core/Error.h"
#include "core/UpdateShards.h"
#include "distribute/Cluster.h"

using namespace strata;
using namespace strata::test;

class TestStrategies : public QObject {
  Q_OBJECT

private:
  // Runs `body` with the GPUs' peer access as `peers` says (the inventory
  // and load stay this build's), then puts the real answer back.
  template <class F>
  static auto with_peers(bool peers, F body) {
    static bool answer;
    answer = peers;
    GpuProvider fake = set_gpu_provider({});
    const GpuProvider real = fake;
    fake.peer_access = [](int, int) { return answer; };
    set_gpu_provider(fake);
    struct Restore {
      GpuProvider real;
      ~Restore() { set_gpu_provider(real); }
    } restore{real};
    return body();
  }

  Dataset data_ = make_synthetic(250, 5, 3, 5);  // 250 = 8 batches of 30 + a partial 10
  std::vector<std::vector<float>> full_state_;   // sharded_update_matches_full_update's reference

  void compare(const QString& opt, int64_t batch, const std::function<std::unique_ptr<Strategy>()>& make) {
    OneDeviceStrategy one;
    Setup ref = make_setup(one, opt.toStdString());
    auto expected = train(one, ref, data_, batch, 24, false, nullptr);

    auto strategy = make();
    Setup s = make_setup(*strategy, opt.toStdString());
    bool identical = false;
    auto got = train(*strategy, s, data_, batch, 24, true, &identical);
    QVERIFY2(identical, "replica weights diverged");
    const double diff = max_relative_difference(expected, got);
    QVERIFY2(diff <= 1e-5, qPrintable(QString("max relative difference %1").arg(diff)));
    qDebug("%s, %d replicas: relative difference %.3g", strategy->name().c_str(), strategy->num_replicas_in_sync(), diff);
  }

private slots:
  void mirrored_matches_one_device_data() {
    QTest::addColumn<int>("replicas");
    QTest::addColumn<QString>("optimizer");
    QTest::addColumn<int>("batch");
    for (int r : {1, 2, 3, 4})
      for (const char* o : {"sgd", "adam"})
        for (int b : {30, 32})  // 30 over 4 replicas is uneven; 250 % 30 leaves a partial last batch
          QTest::newRow(qPrintable(QString("%1 replicas %2 batch %3").arg(r).arg(o).arg(b))) << r << QString(o) << b;
  }
  void mirrored_matches_one_device() {
    QFETCH(int, replicas);
    QFETCH(QString, optimizer);
    QFETCH(int, batch);
    compare(optimizer, batch, [&] { return std::make_unique<MirroredStrategy>(devices(replicas)); });
  }

  void mirrored_reduce_to_one_device_matches() {
    StrategyOptions o;
    o.cross_device_ops = "reduce_to_one_device";
    compare("adam", 30, [&] { return std::make_unique<MirroredStrategy>(devices(3), o); });
  }

  void tiny_fusion_buffers_match() {
    StrategyOptions o;
    o.fusion_bytes = 64;  // forces many buckets and the in-place path
    compare("adam", 30, [&] { return std::make_unique<MirroredStrategy>(devices(2), o); });
  }

  void gradients_reduced_during_backward_match_data() {
    QTest::addColumn<QString>("placement");
    QTest::addColumn<int>("fusion_bytes");
    for (int f : {64, 4 << 20}) {  // a bucket per gradient; one bucket for all
      QTest::newRow(qPrintable(QString("distinct devices, %1 B buckets").arg(f))) << "distinct" << f;
      QTest::newRow(qPrintable(QString("two replicas per device, %1 B buckets").arg(f))) << "shared" << f;
    }
  }
  void gradients_reduced_during_backward_match() {
    // Buckets started as the tape finalises gradients must give the bits of
    // one reduction after the backward pass: the same sums in the same
    // replica order, only issued earlier.
    QFETCH(QString, placement);
    QFETCH(int, fusion_bytes);
    const DeviceKind kind = test_device_kind();
    std::vector<Device> devs = devices(4);
    if (placement == "shared") {
      if (kind == DeviceKind::Cpu) QSKIP("host replicas cannot share a device");
      devs = {Device{kind, 0}, Device{kind, 0}, Device{kind, 1}, Device{kind, 1}};
    }
    StrategyOptions o;
    o.fusion_bytes = static_cast<size_t>(fusion_bytes);
    std::vector<Tensor> result[2];
    for (int overlap = 0; overlap < 2; ++overlap) {
      MirroredStrategy strategy(devs, o);
      Setup s = make_setup(strategy, "adam");
      bool identical = false;
      result[overlap] = train(strategy, s, data_, 32, 12, true, &identical, overlap == 1);
      QVERIFY2(identical, "replica weights diverged");
    }
    for (size_t i = 0; i < result[0].size(); ++i) QCOMPARE(result[1][i].values(), result[0][i].values());
  }

  void central_storage_matches_one_device() {
    compare("sgd", 30, [&] { return std::make_unique<CentralStorageStrategy>(devices(3)); });
    compare("adam", 32, [&] { return std::make_unique<CentralStorageStrategy>(devices(2)); });
  }

  // Central storage: replicas on other devices read the one copy from the
  // storage device's memory. A value the host wrote through that device's
  // stream (a restored checkpoint) must be what they read, even while that
  // device is still busy with earlier work.
  void central_storage_replicas_see_host_writes() {
    CentralStorageStrategy c(devices(2));
    std::unique_ptr<Variable> v;
    {
      auto scope = c.scope();
      v = std::make_unique<Variable>("w", Tensor::zeros(Shape{4}));
    }
    const Device storage = v->component(0).device();
    Tensor a = Tensor::full(Shape{1024, 1024}, 1e-3f, storage), busy = Tensor::empty(Shape{1024, 1024}, storage);
    for (int i = 0; i < 4; ++i)
      backend_for(storage).gemm(false, false, 1024, 1024, 1024, 1.0f, a.ptr(), a.ptr(), 0.0f, busy.ptr());
    v->assign(Tensor::full(Shape{4}, 7.0f));
    std::vector<std::vector<float>> seen(2);
    c.run_replicas([&](ReplicaContext& ctx) {
      // A kernel on the replica's own device reading the shared copy (peer access).
      Tensor mine = Tensor::empty(Shape{4}, ctx.device());
      backend_for(ctx.device()).axpby(4, 1.0f, v->value().ptr(), 0.0f, mine.ptr());
      seen[static_cast<size_t>(ctx.local_replica_id())] = mine.values();
    });
    for (auto& s : seen) QCOMPARE(s, std::vector<float>(4, 7.0f));
  }

  void variables_are_mirrored_in_scope() {
    StrategyOptions full;
    full.sharded_update = "off";
    MirroredStrategy m(devices(3), full);
    Setup s = make_setup(m, "sgd");
    for (auto* v : s.model->trainable_variables()) {
      QCOMPARE(v->num_components(), 3);
      for (int r = 1; r < 3; ++r) {
        QVERIFY(v->component(r).device().same_memory(m.devices()[static_cast<size_t>(r)]));
        QVERIFY(v->component(0).values() == v->component(r).values());
      }
    }
    // Under the sharded update host replicas share one copy, each updating
    // its shard of it in place; replicas on devices keep their own.
    MirroredStrategy sharded(devices(3));
    QVERIFY(sharded.sharded_update());
    Setup ss = make_setup(sharded, "sgd");
    for (auto* v : ss.model->trainable_variables()) QCOMPARE(v->num_components(), testing_sim() ? 3 : 1);
    CentralStorageStrategy c(devices(2));
    Setup cs = make_setup(c, "sgd");
    for (auto* v : cs.model->trainable_variables()) QCOMPARE(v->num_components(), 1);
  }

  void reduce_is_exact_on_integers() {
    MirroredStrategy m(devices(4));
    std::vector<Tensor> values;
    for (int r = 0; r < 4; ++r) values.push_back(Tensor::from(Shape{2, 3}, std::vector<float>{1.f * r, 2, 3, 4, 5, 6.f + r}, m.devices()[static_cast<size_t>(r)]));
    PerReplica<Tensor> pr(values);
    Tensor sum = m.reduce(ReduceOp::Sum, pr);
    QCOMPARE(sum.data()[0], 6.0f);
    QCOMPARE(sum.data()[5], 30.0f);
    Tensor mean = m.reduce(ReduceOp::Mean, pr);
    QCOMPARE(mean.data()[0], 1.5f);
    Tensor along = m.reduce(ReduceOp::Sum, pr, 0);  // also over axis 0
    QCOMPARE(along.shape(), (Shape{3}));
    QCOMPARE(along.data()[0], 6.0f + 4 * 4);
    Tensor along_mean = m.reduce(ReduceOp::Mean, pr, 0);
    QCOMPARE(along_mean.data()[1], (4 * 2 + 4 * 5) / 8.0f);
    QCOMPARE(m.experimental_local_results(pr).size(), size_t{4});
  }

  void all_reduce_is_exact_on_integers_data() {
    QTest::addColumn<QString>("ops");
    if (testing_sim()) QTest::newRow("device_local") << "device_local";
    else QTest::newRow("in_process") << "in_process";
    QTest::newRow("reduce_to_one_device") << "reduce_to_one_device";
  }
  void all_reduce_is_exact_on_integers() {
    QFETCH(QString, ops);
    StrategyOptions o;
    o.cross_device_ops = ops.toStdString();
    o.fusion_bytes = 256;
    MirroredStrategy m(devices(3), o);
    std::atomic<int> bad{0};
    m.run_replicas([&](ReplicaContext& ctx) {
      const int r = ctx.replica_id_in_sync_group();
      // Several sizes: smaller than, equal to and larger than a bucket.
      std::vector<Tensor> ts;
      for (int64_t n : {1, 7, 64, 1000, 3}) {
        std::vector<float> v(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i * (r + 1));
        ts.push_back(Tensor::from(Shape{n}, v, ctx.device()));
      }
      ctx.all_reduce(ReduceOp::Sum, ts);
      for (auto& t : ts) {
        const auto v = t.values();
        for (size_t i = 0; i < v.size(); ++i)
          if (v[i] != static_cast<float>(i * 6)) ++bad;
      }
      Tensor mean = ctx.all_reduce(ReduceOp::Mean, Tensor::full(Shape{5}, static_cast<float>(3 * r), ctx.device()));
      for (auto v : mean.values())
        if (v != 3.0f) ++bad;
    });
    QCOMPARE(bad.load(), 0);
  }

  void split_covers_every_example_once() {
    Batch b = data_.range(0, 10);
    for (int replicas : {1, 3, 4, 10, 11}) {
      auto parts = split_batch(b, replicas);
      int64_t total = 0, smallest = 1 << 30, largest = 0;
      for (auto& p : parts) {
        total += p.size();
        smallest = std::min(smallest, p.size());
        largest = std::max(largest, p.size());
        QCOMPARE(p.global_batch_size, int64_t{10});
      }
      QCOMPARE(total, int64_t{10});
      QVERIFY(largest - smallest <= 1);
      // Contiguous slices in order: replica r's first label is the next one.
      int64_t at = 0;
      for (auto& p : parts)
        for (int64_t i = 0; i < p.size(); ++i) QCOMPARE(p.labels.ints()[i], b.labels.ints()[at++]);
    }
  }

  void distributed_epoch_has_no_duplicates_or_losses() {
    // Tag each example with its index as its single feature.
    std::vector<float> x(103);
    std::vector<int32_t> y(103, 0);
    for (int i = 0; i < 103; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
    y[0] = 1;
    auto ds = std::make_shared<const Dataset>(Dataset::from_float(Shape{1}, x, y, 2));
    MirroredStrategy m(devices(3));
    PipelineOptions po;
    po.batch_size = 20;
    auto dist = m.distribute(std::make_shared<BatchPipeline>(ds, po));
    std::multiset<int> seen;
    std::vector<std::set<int>> per_replica(3);
    int steps = 0;
    for (const auto& inputs : dist) {
      ++steps;
      for (int r = 0; r < 3; ++r)
        for (float tag : inputs[r].features.values()) {
          const int id = static_cast<int>(tag);
          seen.insert(id);
          per_replica[static_cast<size_t>(r)].insert(id);
        }
    }
    QCOMPARE(steps, 6);
    QCOMPARE(static_cast<int>(seen.size()), 103);
    QCOMPARE(static_cast<int>(std::set<int>(seen.begin(), seen.end()).size()), 103);
    for (auto& a : per_replica)
      for (auto& b : per_replica)
        if (&a != &b)
          for (int id : a) QVERIFY(!b.count(id));  // replicas see different data

    // drop_remainder drops the partial batch on every replica alike.
    po.drop_remainder = true;
    auto dropped = m.distribute(std::make_shared<BatchPipeline>(ds, po));
    QCOMPARE(dropped.steps_per_epoch(), int64_t{5});
  }

  void tiny_last_batch_does_not_hang() {
    // 9 examples, batch 8, 4 replicas: the last step has 1 example, so three
    // replicas have none; they must still join the all-reduce.
    auto tiny = make_synthetic(9, 5, 3, 1);
    MirroredStrategy m(devices(4));
    Setup s = make_setup(m, "adam");
    OneDeviceStrategy one;
    Setup r = make_setup(one, "adam");
    bool identical = false;
    auto got = train(m, s, tiny, 8, 6, true, &identical);
    auto expected = train(one, r, tiny, 8, 6, false, nullptr);
    QVERIFY(identical);
    QVERIFY(max_relative_difference(expected, got) <= 1e-5);
  }

  void distribute_from_function_gives_input_context() {
    MirroredStrategy m(devices(2));
    std::vector<InputContext> contexts;
    auto dist = m.distribute_datasets_from_function([&](const InputContext& ctx) {
      contexts.push_back(ctx);
      const int64_t per = ctx.get_per_replica_batch_size(16);
      auto shard = std::make_shared<const Dataset>(data_.subset(ctx.input_pipeline_id * 100, (ctx.input_pipeline_id + 1) * 100));
      PipelineOptions po;
      po.batch_size = per;
      return std::make_shared<BatchPipeline>(shard, po);
    });
    QCOMPARE(contexts.size(), size_t{2});
    QCOMPARE(contexts[1].input_pipeline_id, 1);
    QCOMPARE(contexts[0].num_replicas_in_sync, 2);
    dist.begin_epoch(0);
    auto first = dist.next();
    QVERIFY(first.has_value());
    QCOMPARE((*first)[0].size(), int64_t{8});
    QCOMPARE((*first)[1].global_batch_size, int64_t{16});
    QCOMPARE(dist.steps_per_epoch(), int64_t{13});
    QVERIFY_EXCEPTION_THROWN(contexts[0].get_per_replica_batch_size(15), Error);
  }

  void failing_replica_does_not_hang_others() {
    MirroredStrategy m(devices(3));
    bool threw = false;
    try {
      m.run_replicas([&](ReplicaContext& ctx) {
        if (ctx.replica_id_in_sync_group() == 1) throw bad_input("replica 1 failed");
        std::vector<Tensor> t{Tensor::zeros(Shape{10}, ctx.device())};
        ctx.all_reduce(ReduceOp::Sum, t);  // would wait forever for replica 1
      });
    } catch (const Error& e) {
      threw = true;
      QCOMPARE(QString(e.what()), QString("replica 1 failed"));
    }
    QVERIFY(threw);
    // The strategy is usable again afterwards.
    std::atomic<int> ok{0};
    m.run_replicas([&](ReplicaContext& ctx) {
      Tensor t = ctx.all_reduce(ReduceOp::Sum, Tensor::full(Shape{4}, 1.0f, ctx.device()));
      if (t.values()[3] == 3.0f) ++ok;
    });
    QCOMPARE(ok.load(), 3);
  }

  void the_first_replica_to_fail_is_reported() {
    // Replica 0 fails later, for a reason of its own (as a peer whose NCCL
    // call was aborted does): the report is the failure that came first.
    // Replica 0 waits in a collective that replica 1's failure aborts, so
    // its own failure comes after, whatever the threads' timing.
    MirroredStrategy m(devices(2));
    try {
      m.run_replicas([&](ReplicaContext& ctx) {
        if (ctx.replica_id_in_sync_group() == 1) throw bad_input("replica 1 failed first");
        try {
          ctx.all_reduce(ReduceOp::Sum, Tensor::full(Shape{4}, 1.0f, ctx.device()));
        } catch (const Error& e) {
          if (e.kind() != ErrorKind::Aborted) throw;
        }
        throw runtime_error("replica 0 failed after it");
      });
      QFAIL("no error");
    } catch (const Error& e) {
      QCOMPARE(QString(e.what()), QString("replica 1 failed first"));
      QCOMPARE(e.kind(), ErrorKind::BadInput);
    }
  }

  void cross_device_ops_are_chosen_for_the_devices() {
    // Only the choice: no GPU is touched (NCCL is opened, not used).
    auto chosen = [](std::vector<Device> d, const std::string& name = "auto") {
      return select_cross_device_ops(d, name)->name();
    };
    const Device g0{DeviceKind::Gpu, 0}, g1{DeviceKind::Gpu, 1};
    QCOMPARE(chosen(cpus(2)), std::string("in_process"));
    QCOMPARE(chosen({Device{DeviceKind::Sim, 0}, Device{DeviceKind::Sim, 1}}), std::string("device_local"));
    // Replicas sharing one GPU reduce through its memory; NCCL only when named.
    QCOMPARE(chosen({g0, g0}), std::string("device_local"));
    std::unique_ptr<CrossDeviceOps> nccl;
    for (auto& op : all_cross_device_ops())
      if (op->name() == "nccl") nccl = std::move(op);
#ifdef STRATA_WITH_NCCL
    QVERIFY(nccl);
    std::string why;
    if (nccl->enabled({g0, g1}, &why)) {
      QCOMPARE(chosen({g0, g1}), std::string("nccl"));
      QCOMPARE(chosen({g0, g0, g1, g1}), std::string("nccl"));
      QCOMPARE(chosen({g0}, "nccl"), std::string("nccl"));
    } else {
      QVERIFY2(QString::fromStdString(why).contains("libnccl"), why.c_str());
      QCOMPARE(with_peers(true, [&] { return chosen({g0, g1}); }), std::string("device_local"));
    }
    QVERIFY(!nccl->enabled(cpus(2), &why));
    QVERIFY2(QString::fromStdString(why).contains("GPU replicas only, not cpu:0"), why.c_str());
    // The sharded update over NCCL: one replica per GPU; "auto" keeps the
    // bucketed all-reduce that overlaps the backward pass.
    QVERIFY(nccl->overlaps_compute());
    QVERIFY(nccl->supports_sharding({g0, g1}, &why));
    QVERIFY(!nccl->supports_sharding({g0, g0, g1}, &why));
    QVERIFY2(QString::fromStdString(why).contains("gpu:0 holds several"), why.c_str());
#else
    QVERIFY(!nccl);
    QCOMPARE(with_peers(true, [&] { return chosen({g0, g1}); }), std::string("device_local"));
#endif
  }

  void gpus_without_peer_access_are_not_reduced_in_place() {
    // Consumer GPUs often cannot address each other's memory: the in-place
    // reductions would fault there, so they refuse, naming the pair.
    const Device g0{DeviceKind::Gpu, 0}, g1{DeviceKind::Gpu, 1};
    with_peers(false, [&] {
      for (const std::string name : {"device_local", "reduce_to_one_device"}) {
        try {
          select_cross_device_ops({g0, g1}, name);
          QFAIL("GPUs without peer access must not be reduced in place");
        } catch (const Error& e) {
          QCOMPARE(e.kind(), ErrorKind::BadInput);
          QVERIFY2(QString(e.what()).contains("'" + QString::fromStdString(name) + "' is not available"), e.what());
          QVERIFY2(QString(e.what()).contains("needs each device to address the others' memory"), e.what());
          QVERIFY2(QString(e.what()).contains("gpu:0 cannot address gpu:1's (no peer access between them)"), e.what());
        }
      }
      // Replicas sharing one GPU use its own memory.
      QCOMPARE(select_cross_device_ops({g0, g0})->name(), std::string("device_local"));
      QVERIFY(direct_access(g1, g1));
      QVERIFY(!direct_access(Device{DeviceKind::Cpu, 0}, g0));
      QVERIFY(direct_access(Device{DeviceKind::Sim, 0}, Device{DeviceKind::Sim, 3}));
    });
    with_peers(true, [&] { QVERIFY(direct_access(g0, g1)); });
  }

  void workers_agree_on_the_cross_device_ops() {
    // Two workers as the all-gather shows them: the other one chose as this
    // one did (`agree`), or something no build's ops are called.
    struct TwoWorkers final : Cluster {
      bool agree = true;
      int rank() const override { return 0; }
      int size() const override { return 2; }
      int local_rank() const override { return 0; }
      int local_size() const override { return 1; }
      std::string host() const override { return "here"; }
      std::vector<std::string> hosts() const override { return {"here", "there"}; }
      std::string transport() const override { return "mpi"; }
      void all_reduce_sum(std::span<float>) override {}
      std::vector<double> all_gather(const std::vector<double>& mine) override {
        return {mine.at(0), agree ? mine.at(0) : -1.0};
      }
      void broadcast(std::span<std::byte>, int) override {}
      double timeout_seconds() const override { return 300; }
      [[noreturn]] void abort(int, const std::string& message) override { throw runtime_error(message); }
    };
    auto cluster = std::make_shared<TwoWorkers>();
    QCOMPARE(select_cross_device_ops(cpus(1), "auto", cluster)->name(), std::string("hierarchical_mpi"));
    // Collectives of different kinds would wait for each other forever:
    // every worker fails alike instead, naming each one's choice.
    cluster->agree = false;
    try {
      select_cross_device_ops(cpus(1), "auto", cluster);
      QFAIL("workers that chose differently must not train");
    } catch (const std::exception& e) {
      const QString msg = e.what();
      QVERIFY2(msg.contains("worker 0 hierarchical_mpi, worker 1 another"), e.what());
      QVERIFY2(msg.contains("strategy.cross_device_ops"), e.what());
    }
  }

  void bad_configurations_are_clear_errors() {
    auto expect = [](const std::function<void()>& fn, const QString& needle) {
      try {
        fn();
        QFAIL(qPrintable("no error; expected one mentioning " + needle));
      } catch (const Error& e) {
        QCOMPARE(e.kind(), ErrorKind::BadInput);
        QVERIFY2(QString(e.what()).contains(needle), e.what());
      }
    };
    expect([] { Device::parse_list(""); }, "zero replicas");
    expect([] { MirroredStrategy m(std::vector<Device>{Device{DeviceKind::Cpu, 999}}); }, "cpu:999 does not exist");
    expect([] { MirroredStrategy m({"cpu:0", "cpu:0"}); }, "listed twice");
    expect([] { MirroredStrategy m({"tpu:0"}); }, "unknown kind");
    expect([] { make_strategy("hyperdrive", {}); }, "does not exist");
    expect(
        [] {
          StrategyOptions o;
          o.cross_device_ops = "carrier_pigeon";
          make_strategy("mirrored", o);
        },
        "carrier_pigeon");
    expect([&] {
      MirroredStrategy m(cpus(4));
      PipelineOptions po;
      po.batch_size = 3;
      m.distribute(std::make_shared<BatchPipeline>(std::make_shared<const Dataset>(data_), po));
    }, "smaller than the 4 replicas");
    expect([] { OneDeviceStrategy o(Device{DeviceKind::Gpu, 0}); }, "gpu:0");
    expect(
        [] {
          StrategyOptions o;
          o.sharded_update = "maybe";
          MirroredStrategy m(cpus(2), o);
        },
        "'maybe' is not one of auto, on, off");
    expect(
        [] {
          StrategyOptions o;
          o.sharded_update = "on";
          CentralStorageStrategy c(cpus(2), o);
        },
        "share one copy of the variables");
    expect(
        [] {
          StrategyOptions o;
          o.sharded_update = "on";
          o.cross_device_ops = "reduce_to_one_device";
          MirroredStrategy m(cpus(2), o);
        },
        "cannot reduce-scatter");
  }

  // The sharded update (ZeRO-1) against the full update on every replica:
  // the same sums in the same replica order and the same element-wise
  // optimizer arithmetic, only each element updated by one replica and then
  // copied, so the weights must agree to the bit.
  void sharded_update_matches_full_update_data() {
    QTest::addColumn<int>("replicas");
    QTest::addColumn<QString>("optimizer");
    QTest::addColumn<bool>("overlap");
    QTest::addColumn<QString>("placement");
    for (int r : {2, 3, 4})
      for (const char* o : {"sgd", "adam"})
        for (bool overlap : {false, true})
          QTest::newRow(qPrintable(QString("%1 replicas %2%3").arg(r).arg(o).arg(overlap ? " trainer form" : "")))
              << r << QString(o) << overlap << "distinct";
    // Accelerator replicas sharing one device, and two on each of two.
    for (const char* placement : {"one device", "two per device"})
      QTest::newRow(qPrintable(QString("4 replicas adam, %1").arg(placement))) << 4 << "adam" << true << placement;
  }
  void sharded_update_matches_full_update() {
    QFETCH(int, replicas);
    QFETCH(QString, optimizer);
    QFETCH(bool, overlap);
    QFETCH(QString, placement);
    const DeviceKind kind = test_device_kind();
    std::vector<Device> devs = devices(replicas);
    if (placement != "distinct") {
      if (kind == DeviceKind::Cpu) QSKIP("host replicas cannot share a device");
      for (int r = 0; r < replicas; ++r) devs[static_cast<size_t>(r)] = Device{kind, placement == "one device" ? 0 : r / 2};
    }
    std::vector<Tensor> result[2];
    int64_t state_bytes[2] = {0, 0};
    for (int sharded = 0; sharded < 2; ++sharded) {
      StrategyOptions o;
      o.sharded_update = sharded ? "on" : "off";
      MirroredStrategy m(devs, o);
      QCOMPARE(m.sharded_update(), sharded == 1);
      Setup s = make_setup(m, optimizer.toStdString());
      bool identical = false;
      result[sharded] = train(m, s, data_, 30, 24, true, &identical, overlap);
      QVERIFY2(identical, "replica weights diverged");
      // The state a checkpoint saves: gathered from the shards' owners.
      std::vector<std::vector<float>> state;
      for (auto& [name, v] : s.optimizer->slot_variables()) state.push_back(v->component(0).to(Device{}).values());
      if (sharded == 0) {
        state_bytes[0] = s.optimizer->state_bytes();
        full_state_ = state;
      } else {
        state_bytes[1] = s.optimizer->state_bytes();
        QCOMPARE(state, full_state_);
      }
    }
    for (size_t i = 0; i < result[0].size(); ++i) QCOMPARE(result[1][i].values(), result[0][i].values());
    // The optimizer state exists once instead of once per replica: shared
    // where the replicas share one memory, divided among them (each holds
    // its shard's) where they do not.
    if (state_bytes[0] > 0) QCOMPARE(state_bytes[1] * replicas, state_bytes[0]);
  }

  // State written into the slot variables between steps (a restore) is what
  // the next updates start from, also where each replica holds only its
  // shard of it (separate memories): sharded and full updates still agree.
  void sharded_update_follows_restored_state() {
    std::vector<Tensor> result[2];
    for (int sharded = 0; sharded < 2; ++sharded) {
      StrategyOptions o;
      o.sharded_update = sharded ? "on" : "off";
      MirroredStrategy m(devices(3), o);
      Setup s = make_setup(m, "adam");
      bool identical = false;
      train(m, s, data_, 30, 8, true, &identical);
      for (auto& [name, v] : s.optimizer->slot_variables()) {
        std::vector<float> x = v->component(0).to(Device{}).values();
        for (float& f : x) f *= 0.25f;
        v->assign(Tensor::from(v->shape(), x, Device{}));
      }
      result[sharded] = train(m, s, data_, 30, 8, true, &identical);
      QVERIFY2(identical, "replica weights diverged");
    }
    for (size_t i = 0; i < result[0].size(); ++i) QCOMPARE(result[1][i].values(), result[0][i].values());
  }

  void sharded_update_is_the_default() {
    QVERIFY(MirroredStrategy(cpus(2)).sharded_update());
    QVERIFY(MirroredStrategy(devices(2)).sharded_update());
    QVERIFY(!MirroredStrategy(cpus(1)).sharded_update());
    QVERIFY(!CentralStorageStrategy(cpus(2)).sharded_update());
    StrategyOptions o;
    o.sharded_update = "off";
    QVERIFY(!MirroredStrategy(cpus(2), o).sharded_update());
  }

  // Shards cover every element once, in order, about evenly, and cut only on
  // whole cache lines (16 floats) inside a tensor.
  void update_shards_cover_every_element_once() {
    const std::vector<size_t> sizes{784 * 256, 256, 256 * 128, 128, 1, 0, 1280, 10, 33};
    size_t total = 0;
    for (size_t n : sizes) total += n;
    for (int n : {1, 2, 3, 4, 7}) {
      UpdateShards shards(sizes, n);
      QVERIFY(shards.fits(sizes));
      std::vector<std::vector<int>> seen(sizes.size());
      for (size_t t = 0; t < sizes.size(); ++t) seen[t].assign(sizes[t], 0);
      size_t elements = 0;
      for (int r = 0; r < n; ++r) {
        for (const ShardPiece& p : shards.of(r)) {
          QVERIFY(p.count > 0);
          QVERIFY(p.offset % 16 == 0);
          for (int64_t i = 0; i < p.count; ++i) ++seen[static_cast<size_t>(p.variable)][static_cast<size_t>(p.offset + i)];
        }
        // Within a cache line per cut of the even share.
        const double share = static_cast<double>(total) / n;
        QVERIFY2(std::abs(static_cast<double>(shards.elements(r)) - share) <= 32,
                 qPrintable(QString::number(shards.elements(r))));
        elements += shards.elements(r);
      }
      QCOMPARE(elements, total);
      for (auto& t : seen)
        for (int c : t) QCOMPARE(c, 1);
    }
  }

  void cores_are_divided_among_replicas() {
    StrategyOptions o;
    o.threads = 8;
    MirroredStrategy m(cpus(4), o);
    QCOMPARE(m.threads_per_replica(), 2);
    StrategyOptions two_threads;
    two_threads.threads = 2;
    MirroredStrategy few(cpus(4), two_threads);
    QCOMPARE(few.threads_per_replica(), 1);
  }
};

QTEST_GUILESS_MAIN(TestStrategies)
#include "test_strategies.moc"
