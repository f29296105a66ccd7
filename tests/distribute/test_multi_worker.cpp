// MultiWorkerMirrored with real mpirun processes: equal to single-process
// Mirrored with the same replicas, failures that end the run with a message
// naming the rank, and bad launches.
#include <QtTest>

#include <set>

#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>

#include "distribute/MpiTestUtil.h"
#include "project/ProjectFile.h"
#include "trace/ChromeTraceReader.h"
#include "train/SafeTensors.h"

using namespace strata;

namespace {
RunConfig project(int epochs) {
  RunConfig c;
  c.name = "mw";
  c.dataset.kind = "synthetic";
  c.dataset.synthetic_examples = 700;
  c.dataset.synthetic_features = 10;
  c.dataset.synthetic_classes = 3;
  c.layers = {nlohmann::json{{"type", "dense"}, {"units", 24}, {"activation", "relu"}},
              nlohmann::json{{"type", "batch_normalization"}, {"synchronized", true}},
              nlohmann::json{{"type", "dense"}, {"units", 3}}};
  c.training.epochs = epochs;
  c.training.batch_size = 42;
  c.training.optimizer.learning_rate = 0.01f;
  c.training.threads = 1;
  return c;
}

std::map<std::string, std::vector<float>> weights(const QString& run) {
  std::map<std::string, std::vector<float>> out;
  std::ifstream latest((run + "/checkpoints/latest").toStdString());
  std::string name;
  latest >> name;
  for (auto& [n, t] : read_safetensors((run + "/checkpoints/").toStdString() + name + "/model.safetensors").tensors)
    out[n] = std::vector<float>(t.data(), t.data() + t.numel());
  return out;
}
}  // namespace

class TestMultiWorker : public QObject {
  Q_OBJECT

  // Starts a 2-rank run that would train for hours and returns the pid of
  // its newest worker process once training is under way.
  static qint64 start_long_run(QTemporaryDir& tmp, QProcess& p, int timeout) {
    const QString proj = tmp.path() + "/long.strata";
    save_project(project(100000), proj.toStdString());
    p.start("mpirun", mpirun_args(2) + QStringList{bin("app/strata-run"), proj, "--strategy", "multi_worker_mirrored",
                                                   "--no-run-dir", "--events", "jsonl", "--collective-timeout",
                                                   QString::number(timeout)});
    if (!p.waitForStarted() || !p.waitForReadyRead(30000)) return -1;
    QTest::qWait(500);
    QProcess pgrep;
    pgrep.start("pgrep", {"-f", "-n", "strata-run " + proj});
    pgrep.waitForFinished();
    return pgrep.readAllStandardOutput().trimmed().toLongLong();
  }

private slots:
  void initTestCase() { STRATA_SKIP_WITHOUT_MPI(); }

  void equals_single_process_mirrored_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("local");
    QTest::addColumn<QString>("kind");  // the workers' replica devices; the reference runs on cpu
    QTest::newRow("2 ranks x 1 replica") << 2 << 1 << "cpu";
    QTest::newRow("3 ranks x 1 replica") << 3 << 1 << "cpu";
    QTest::newRow("2 ranks x 2 replicas") << 2 << 2 << "cpu";
    QTest::newRow("2 ranks x 2 sim replicas") << 2 << 2 << "sim";
  }
  void equals_single_process_mirrored() {
    QFETCH(int, ranks);
    QFETCH(int, local);
    QFETCH(QString, kind);
    QTemporaryDir tmp;
    const QString proj = tmp.path() + "/mw.strata";
    save_project(project(2), proj.toStdString());
    QString devices, all;
    for (int i = 0; i < local; ++i) devices += (i ? "," : "") + kind + ":" + QString::number(i);
    for (int i = 0; i < ranks * local; ++i) all += (i ? ",cpu:" : "cpu:") + QString::number(i);

    auto single = run(bin("app/strata-run"), {proj, "--strategy", "mirrored", "--devices", all, "--run-dir", tmp.path() + "/single"});
    QVERIFY2(single.code == 0, qPrintable(single.err));
    auto multi = run("mpirun", mpirun_args(ranks) + QStringList{bin("app/strata-run"), proj, "--strategy", "multi_worker_mirrored",
                                                                  "--devices", devices, "--run-dir", tmp.path() + "/multi",
                                                                  "--events", "jsonl"});
    QVERIFY2(multi.code == 0, qPrintable(multi.err));

    // Rank 0 alone reports, with every replica's loss in global order.
    const auto lines = multi.out.split('\n', Qt::SkipEmptyParts);
    auto first = nlohmann::json::parse(lines.first().toStdString());
    QCOMPARE(first["workers"].get<int>(), ranks);
    QCOMPARE(first["replicas"].get<int>(), ranks * local);
    int steps = 0;
    for (auto& l : lines) {
      auto j = nlohmann::json::parse(l.toStdString());
      if (j["type"] == "step") {
        ++steps;
        QCOMPARE(j["replica_losses"].size(), size_t(ranks * local));
        QCOMPARE(j["worker_step_times"].size(), size_t(ranks));
      }
    }
    QCOMPARE(steps, 2 * first["steps_per_epoch"].get<int>());

    auto a = weights(tmp.path() + "/single"), b = weights(tmp.path() + "/multi");
    QCOMPARE(a.size(), b.size());
    for (auto& [name, va] : a) {
      const auto& vb = b.at(name);
      double diff = 0, norm = 0;
      for (size_t i = 0; i < va.size(); ++i) {
        diff += double(va[i] - vb[i]) * (va[i] - vb[i]);
        norm += double(va[i]) * va[i];
      }
      const double rel = std::sqrt(diff) / std::max(1e-12, std::sqrt(norm));
      QVERIFY2(rel <= 1e-5, qPrintable(QString("%1: relative difference %2").arg(name.c_str()).arg(rel)));
    }
  }

  // Early stopping and a plateau's reductions across ranks: each rank
  // decides from the same reduced figures, so all stop after the same epoch
  // and every rank ends cleanly (none waits in a collective for the others).
  void callbacks_decide_alike_on_every_rank() {
    QTemporaryDir tmp;
    const QString proj = tmp.path() + "/cb.strata";
    RunConfig c = project(40);
    c.training.lr_schedule.type = "cosine";
    c.training.early_stopping = {true, "val_loss", 2, 0.02};
    c.training.reduce_lr_on_plateau = {true, "val_loss", 0.5, 1, 0.005, 0, 0.0};
    save_project(c, proj.toStdString());
    QTemporaryDir status;
    const Result r = run("mpirun", mpirun_args(2) + with_rank_status(status.path(), {bin("app/strata-run"), proj, "--strategy",
                                                                                      "multi_worker_mirrored", "--no-run-dir",
                                                                                      "--events", "jsonl"}));
    QVERIFY2(rank_statuses(status.path(), 2) == std::vector<int>(2, 0), qPrintable(r.err));
    const auto fin = events(r.out, "finished");
    QVERIFY2(fin.size() == 1 && fin[0]["stopped_early"].toBool(), qPrintable(r.out));
    QVERIFY(fin[0]["epochs_completed"].toInt() < 40);
  }

  // Under mpirun every rank writes its own timeline, with its clock offset to
  // rank 0's; --merge-traces puts them in one file, one process per rank.
  void every_rank_writes_a_trace_and_they_merge() {
    QTemporaryDir tmp;
    const QString trace = tmp.path() + "/trace.json", merged = tmp.path() + "/merged.json";
    const Result r = run("mpirun", mpirun_args(2) + QStringList{bin("app/strata-run"), tiny(), "--strategy",
                                                                "multi_worker_mirrored", "--no-run-dir", "--events", "jsonl",
                                                                "--epochs", "1", "--trace", trace});
    QVERIFY2(r.code == 0, qPrintable(story(r)));
    QVERIFY(!QFile::exists(trace));
    const Result m = run(bin("app/strata-run"),
                         {"--merge-traces", merged, tmp.path() + "/trace.rank0.json", tmp.path() + "/trace.rank1.json"});
    QVERIFY2(m.code == 0, qPrintable(story(m)));
    QFile f(merged);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(doc["otherData"].toObject()["ranks"].toArray().size(), 2);
    std::set<int> pids;
    for (const auto& e : doc["traceEvents"].toArray())
      if (e.toObject()["ph"] == "X") pids.insert(e.toObject()["pid"].toInt());
    QCOMPARE(pids, (std::set<int>{0, 1}));
  }

  // Sampled device lanes (docs/timeline.md) across ranks: rank 0 decides when
  // a burst begins and every rank marks the same steps, so the merged
  // trace's device lanes line up. (Each rank once decided on its own clock:
  // bursts at steps 762-781 on one rank and 764-783 on the other.) A
  // simulated accelerator on each rank; its steps take well under a
  // millisecond, so a second's run has several bursts.
  void ranks_mark_the_same_device_lane_steps() {
    QTemporaryDir tmp;
    const QString trace = tmp.path() + "/trace.json";
    const Result r = run("mpirun", mpirun_args(2) + QStringList{bin("app/strata-run"), tiny(), "--strategy",
                                                                "multi_worker_mirrored", "--devices", "sim:0", "--no-run-dir",
                                                                "--events", "jsonl", "--epochs", "200", "--trace", trace});
    QVERIFY2(r.code == 0, qPrintable(story(r)));
    // The steps of each rank's device lanes.
    std::vector<std::set<int64_t>> marked(2);
    for (int rank = 0; rank < 2; ++rank)
      for (const trace::Span& s :
           trace::read_chrome_trace((tmp.path() + QString("/trace.rank%1.json").arg(rank)).toStdString()).spans)
        if (s.lane.kind == trace::LaneKind::Device && s.step >= 0) marked[static_cast<size_t>(rank)].insert(s.step);
    // Bursts: runs of consecutive steps.
    auto bursts_of = [](const std::set<int64_t>& steps) {
      std::vector<std::pair<int64_t, int64_t>> out;
      for (int64_t s : steps)
        if (!out.empty() && out.back().second == s - 1) out.back().second = s;
        else out.emplace_back(s, s);
      return out;
    };
    auto text = [](const std::vector<std::pair<int64_t, int64_t>>& bursts) {
      QString t;
      for (auto [a, b] : bursts) t += QString(" %1-%2").arg(a).arg(b);
      return t;
    };
    const auto bursts = bursts_of(marked[0]);
    const QString seen = text(bursts);
    qInfo("device lanes of rank 0 at steps%s", qPrintable(seen));
    QVERIFY(!marked[0].empty());
    QVERIFY2(marked[0] == marked[1], qPrintable("rank 0:" + seen + ", rank 1:" + text(bursts_of(marked[1]))));
    // The first burst begins with the first step, each is 20 steps (a slow
    // step's bursts follow each other), and a second is enough for more.
    QCOMPARE(bursts.front().first, int64_t{1});
    const int64_t steps = events(r.out, "step").size();
    for (auto [a, b] : bursts) QVERIFY2((b - a + 1) % 20 == 0 || b == steps, qPrintable(seen));
    QVERIFY2(bursts.size() >= 2 || marked[0].size() > 20, qPrintable(seen));
  }

  void killed_rank_ends_the_run() {
    QTemporaryDir tmp;
    QProcess p;
    const qint64 victim = start_long_run(tmp, p, 5);
    QVERIFY(victim > 0);  // never kill(-1, ...)
    ::kill(static_cast<pid_t>(victim), SIGKILL);
    QVERIFY2(p.waitForFinished(30000), "the other ranks did not stop within 30 s");
    QVERIFY(p.exitCode() != 0 || p.exitStatus() != QProcess::NormalExit);
    const QString err = p.readAllStandardError();
    // mpirun ends the job and names the rank that died (docs/multi-worker.md, Failures).
    QVERIFY2(err.contains(QRegularExpression("process rank \\d+ .* exited on signal 9")), qPrintable(err));
  }

  void hung_rank_times_out() {
    QTemporaryDir tmp;
    QProcess p;
    const qint64 victim = start_long_run(tmp, p, 3);
    QVERIFY(victim > 0);  // never kill(-1, ...)
    ::kill(static_cast<pid_t>(victim), SIGSTOP);  // alive but silent
    const bool finished = p.waitForFinished(40000);
    ::kill(static_cast<pid_t>(victim), SIGKILL);
    QVERIFY2(finished, "the run did not end after the collective timeout");
    const QString err = p.readAllStandardError();
    QVERIFY2(err.contains("no answer within 3 s"), qPrintable(err));
    QVERIFY2(err.contains("rank 0"), qPrintable(err));
  }

  void bad_launches_are_clear_errors() {
    QTemporaryDir tmp;
    const QString proj = tmp.path() + "/a.strata", other = tmp.path() + "/b.strata";
    save_project(project(1), proj.toStdString());
    RunConfig c = project(1);
    c.layers[0]["units"] = 25;
    save_project(c, other.toStdString());
    // Without mpirun.
    auto alone = run(bin("app/strata-run"), {proj, "--strategy", "multi_worker_mirrored", "--no-run-dir"});
    QCOMPARE(alone.code, 2);
    QVERIFY2(alone.err.contains("start the workers with mpirun"), qPrintable(alone.err));
    // Two ranks given different projects (MPMD launch).
    auto mixed = run("mpirun", QStringList{"--allow-run-as-root", "--oversubscribe", "-np", "1", bin("app/strata-run"), proj,
                                           "--strategy", "multi_worker_mirrored", "--no-run-dir", ":", "-np", "1",
                                           bin("app/strata-run"), other, "--strategy", "multi_worker_mirrored", "--no-run-dir"});
    QVERIFY(mixed.code != 0);
    QVERIFY2(mixed.err.contains("different project") && mixed.err.contains("its model settings differ"), qPrintable(mixed.err));
    // The same layers, another batch size on rank 1 (or seed, or optimizer):
    // the collectives would mix differently sized steps. Refused too.
    for (const QStringList& differs : {QStringList{"--batch-size", "32"}, QStringList{}}) {
      QString proj_b = proj;
      if (differs.isEmpty()) {
        RunConfig seeded = project(1);
        seeded.training.seed += 1;
        proj_b = tmp.path() + "/seed.strata";
        save_project(seeded, proj_b.toStdString());
      }
      auto unequal = run("mpirun", QStringList{"--allow-run-as-root", "--oversubscribe", "-np", "1", bin("app/strata-run"),
                                               proj, "--strategy", "multi_worker_mirrored", "--no-run-dir", ":", "-np", "1",
                                               bin("app/strata-run"), proj_b, "--strategy", "multi_worker_mirrored",
                                               "--no-run-dir"} + differs);
      QVERIFY(unequal.code != 0);
      QVERIFY2(unequal.err.contains("its training settings differ"), qPrintable(unequal.err));
    }
    // Different replica counts per rank.
    auto uneven = run("mpirun", QStringList{"--allow-run-as-root", "--oversubscribe", "-np", "1", bin("app/strata-run"), proj,
                                            "--strategy", "multi_worker_mirrored", "--no-run-dir", "--devices", "cpu:0", ":", "-np", "1",
                                            bin("app/strata-run"), proj, "--strategy", "multi_worker_mirrored", "--no-run-dir",
                                            "--devices", "cpu:0,cpu:1"});
    QVERIFY(uneven.code != 0);
    QVERIFY2(uneven.err.contains("same --devices count"), qPrintable(uneven.err));
  }
};

QTEST_GUILESS_MAIN(TestMultiWorker)
#include "test_multi_worker.moc"
