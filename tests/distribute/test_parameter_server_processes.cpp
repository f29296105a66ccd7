// ParameterServerStrategy across processes under real mpirun: the first
// ranks serve, the others work. Synchronous (k = 0) equals in-process
// Mirrored; a worker rank that dies (SIGKILL) leaves the run going; a server
// that fails ends the run with its name, and the run resumes from its epoch
// checkpoint; bad launches are clear errors.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <nlohmann/json.hpp>

#include "distribute/MpiTestUtil.h"
#include "project/ProjectFile.h"

using namespace strata;

namespace {

// The worker ranks must be able to die without mpirun ending the job.
QStringList ps_launch(int ranks) { return mpirun_args(ranks) + QStringList{"--enable-recovery"}; }

}  // namespace

class TestParameterServerProcesses : public QObject {
  Q_OBJECT

private slots:
  void initTestCase() { STRATA_SKIP_WITHOUT_MPI(); }

  // 1 server + 2 workers, synchronous: the same losses, step by step, as
  // Mirrored with 2 replicas in one process.
  void synchronous_equals_in_process_mirrored() {
    auto mirrored = run(bin("app/strata-run"), {tiny(), "--strategy", "mirrored", "--devices", "cpu:0,cpu:1", "--no-run-dir",
                                               "--events", "jsonl", "--epochs", "2"});
    QVERIFY2(mirrored.code == 0, qPrintable(mirrored.err));
    QTemporaryDir status;
    auto ps = run("mpirun", ps_launch(3) + with_rank_status(status.path(),
                                                            {bin("app/strata-run"), tiny(), "--strategy", "parameter_server",
                                                             "--servers", "1", "--staleness", "0", "--no-run-dir",
                                                             "--events", "jsonl", "--epochs", "2"}));
    QVERIFY2(ps.code == 0, qPrintable(ps.err));
    // Every rank, servers included, ended cleanly (mpirun's own code cannot say).
    const auto codes = rank_statuses(status.path(), 3);
    QVERIFY2(codes == std::vector<int>(3, 0), qPrintable(statuses_text(codes) + ps.err));
    const auto started = events(ps.out, "run_started");
    QCOMPARE(started.size(), size_t{1});  // rank 0 alone reports
    QCOMPARE(started[0]["servers"].toInt(), 1);
    QCOMPARE(started[0]["replicas"].toInt(), 2);
    const auto a = events(mirrored.out, "step"), b = events(ps.out, "step");
    QCOMPARE(b.size(), a.size());
    QVERIFY(!a.empty());
    for (size_t i = 0; i < a.size(); ++i) {
      const double x = a[i]["loss"].toDouble(), y = b[i]["loss"].toDouble();
      QVERIFY2(std::abs(x - y) <= 1e-5 * std::max(1.0, std::abs(x)),
               qPrintable(QString("step %1: mirrored %2, parameter_server %3").arg(i + 1).arg(x).arg(y)));
      QCOMPARE(b[i]["staleness"].toInt(), 0);
      QCOMPARE(b[i]["replica_losses"].toArray().size(), 2);
    }
    QCOMPARE(events(ps.out, "finished").front()["status"].toString(), QString("completed"));
  }

  // Worker 1 (rank 3) kills itself with SIGKILL in its 10th push, between
  // the header and the gradient (the servers once waited on that gradient
  // for ever).
  void killed_worker_rank_leaves_run_going() {
    QTemporaryDir status;
    auto r = run("mpirun", ps_launch(4) + with_rank_status(status.path(),
                                                           {bin("app/strata-run"), tiny(), "--strategy", "parameter_server",
                                                            "--servers", "2", "--staleness", "2", "--fail-worker", "1@10",
                                                            // Generous: a busy CI machine must not make a live worker look dead.
                                                            "--collective-timeout", "8", "--no-run-dir", "--events",
                                                            "jsonl", "--epochs", "3"}));
    // The servers and the surviving worker end cleanly; the killed worker's
    // shell reports its SIGKILL (128 + 9).
    const auto codes = rank_statuses(status.path(), 4);
    QVERIFY2(codes == (std::vector<int>{0, 0, 0, 137}), qPrintable(statuses_text(codes) + story(r)));
    const auto fin = events(r.out, "finished");
    QVERIFY2(fin.size() == 1, qPrintable(story(r)));
    QVERIFY2(fin[0]["status"].toString() == "completed", qPrintable(story(r)));
    bool warned = false;
    for (auto& l : events(r.out, "log"))
      warned = warned || l["message"].toString().contains("worker 1 (rank 3) lost");
    QVERIFY2(warned, qPrintable(r.out));
    const auto steps = events(r.out, "step");
    QCOMPARE(static_cast<int>(steps.size()), 3 * events(r.out, "run_started")[0]["steps_per_epoch"].toInt());
    for (auto& s : steps) QVERIFY(s["staleness"].toInt() <= 2);
    QCOMPARE(steps.back()["lost_workers"].toArray(), QJsonArray{1});
    QCOMPARE(steps.back()["worker_steps"].toArray()[1].toInt(), 9);  // it pushed 9 slices, then died
    QVERIFY(events(r.out, "epoch").back()["val_accuracy"].toDouble() > 0.9);
  }

  // Worker 1 (rank 3) dies at its last slice of epoch 1 (16 rounds), after
  // worker 0 has finished the epoch and waits for the chief's go-ahead. The
  // chief declares it lost after the timeout; the rounds it left unfinished
  // count as done, the epoch closes, and the run completes on worker 0.
  // (Before: the epoch closed before the loss was counted, "epoch 1 ended
  // after 15 of 16 steps", and worker 0 gave up in the same instant.)
  void worker_lost_in_last_round_of_epoch() {
    QTemporaryDir status;
    auto r = run("mpirun", ps_launch(4) + with_rank_status(status.path(),
                                                           {bin("app/strata-run"), tiny(), "--strategy", "parameter_server",
                                                            "--servers", "2", "--staleness", "2", "--fail-worker", "1@16",
                                                            "--collective-timeout", "4", "--no-run-dir", "--events",
                                                            "jsonl", "--epochs", "2"}));
    const auto codes = rank_statuses(status.path(), 4);
    QVERIFY2(codes == (std::vector<int>{0, 0, 0, 137}), qPrintable(statuses_text(codes) + story(r)));
    QCOMPARE(events(r.out, "run_started")[0]["steps_per_epoch"].toInt(), 16);
    const auto fin = events(r.out, "finished");
    QVERIFY2(fin.size() == 1 && fin[0]["status"].toString() == "completed", qPrintable(story(r)));
    QCOMPARE(static_cast<int>(events(r.out, "step").size()), 32);
    QCOMPARE(static_cast<int>(events(r.out, "epoch").size()), 2);
  }

  // Server 1 fails at its 40th update (in epoch 2): the run fails naming it,
  // and --resume continues from the epoch-1 checkpoint to the end.
  void failed_server_fails_run_and_resumes() {
    QTemporaryDir tmp;
    const QString dir = tmp.path() + "/run";
    const QStringList common{bin("app/strata-run"), tiny(), "--strategy", "parameter_server", "--servers", "2",
                             "--collective-timeout", "2", "--events", "jsonl", "--epochs", "3"};
    auto failed = run("mpirun", ps_launch(4) + common + QStringList{"--run-dir", dir, "--fail-server", "1@40"});
    QVERIFY2(failed.err.contains("parameter server 1 failed"), qPrintable(failed.err));
    // The failed server's rank aborts the job (MPI_Abort); the chief may be
    // ended before it reports, but it never reports success.
    for (auto& f : events(failed.out, "finished")) QCOMPARE(f["status"].toString(), QString("failed"));
    QVERIFY(events(failed.out, "step").size() < size_t{3 * 16});
    QVERIFY(QFile::exists(dir + "/checkpoints/latest"));

    QTemporaryDir status;
    auto resumed = run("mpirun", ps_launch(4) + with_rank_status(status.path(), common + QStringList{"--resume", dir}));
    QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
    const auto codes = rank_statuses(status.path(), 4);
    QVERIFY2(codes == std::vector<int>(4, 0), qPrintable(statuses_text(codes) + resumed.err));
    const auto done = events(resumed.out, "finished");
    QVERIFY2(done.size() == 1 && done[0]["status"].toString() == "completed", qPrintable(resumed.out + resumed.err));
    const auto steps = events(resumed.out, "step");
    const int per_epoch = events(resumed.out, "run_started")[0]["steps_per_epoch"].toInt();
    QCOMPARE(steps.front()["step"].toInt(), per_epoch + 1);  // from the end of epoch 1
    QCOMPARE(steps.back()["step"].toInt(), 3 * per_epoch);
  }

  // SIGTERM to every rank mid-epoch: the chief picks a round every worker
  // finishes, checkpoints there, and --resume continues from the next one.
  void stop_mid_epoch_and_resume() {
    const QString fashion = STRATA_SOURCE_DIR "/resources/examples/fashion-mlp.strata";
    if (!QFile::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) QSKIP("Fashion-MNIST is not installed");
    QTemporaryDir tmp;
    const QString proj = tmp.path() + "/stop.strata";
    QVERIFY(QFile::copy(fashion, proj));
    const QString dir = tmp.path() + "/run";
    const QStringList args{bin("app/strata-run"), proj, "--strategy", "parameter_server", "--servers", "1", "--staleness",
                           "2", "--epochs", "3", "--events", "jsonl", "--run-dir", dir};
    QProcess p;
    p.start("mpirun", ps_launch(3) + args);
    QVERIFY(p.waitForStarted());
    QByteArray out;
    // Mid-epoch 1: 50 steps in (an epoch is 469), however fast the machine.
    QTRY_VERIFY_WITH_TIMEOUT(events(QString::fromUtf8(out += p.readAllStandardOutput()), "step").size() >= 50, 60000);
    // As the dashboard's Stop: SIGTERM to the ranks, not to mpirun (which
    // takes it as "abort the job" and kills the ranks a second later).
    QProcess::execute("pkill", {"-TERM", "-f", "^" + QRegularExpression::escape(bin("app/strata-run") + " " + proj)});
    QVERIFY(p.waitForFinished(60000));
    out += p.readAllStandardOutput();
    const auto fin = events(QString::fromUtf8(out), "finished");
    QVERIFY2(fin.size() == 1 && fin[0]["status"].toString() == "stopped", qPrintable(QString::fromUtf8(out).right(2000)));
    const int stopped_at = fin[0]["steps"].toInt();
    const int per_epoch = events(QString::fromUtf8(out), "run_started")[0]["steps_per_epoch"].toInt();
    QVERIFY(stopped_at > 0 && stopped_at < 3 * per_epoch);
    QVERIFY(QFile::exists(dir + "/checkpoints/ckpt-" + QString::number(stopped_at) + "/state.json"));

    QTemporaryDir status;
    auto resumed = run("mpirun", ps_launch(3) + with_rank_status(status.path(), args + QStringList{"--resume", dir}));
    QVERIFY2(resumed.code == 0, qPrintable(resumed.err));
    const auto codes = rank_statuses(status.path(), 3);
    QVERIFY2(codes == std::vector<int>(3, 0), qPrintable(statuses_text(codes) + resumed.err));
    const auto steps = events(resumed.out, "step");
    QVERIFY(!steps.empty());
    QCOMPARE(steps.front()["step"].toInt(), stopped_at + 1);
    const auto done = events(resumed.out, "finished");
    QVERIFY2(done.size() == 1 && done[0]["status"].toString() == "completed", qPrintable(resumed.out.right(2000)));
    QCOMPARE(done[0]["steps"].toInt(), 3 * per_epoch);
  }

  void bad_launches() {
    auto no_worker = run("mpirun", mpirun_args(2) + QStringList{bin("app/strata-run"), tiny(), "--strategy", "parameter_server",
                                                                 "--servers", "2", "--no-run-dir"});
    QVERIFY(no_worker.code != 0);
    QVERIFY2(no_worker.err.contains("2 ranks with 2 servers leave no worker"), qPrintable(no_worker.err));
    auto two_devices = run("mpirun", mpirun_args(2) + QStringList{bin("app/strata-run"), tiny(), "--strategy",
                                                                   "parameter_server", "--devices", "cpu:0,cpu:1", "--no-run-dir"});
    QVERIFY(two_devices.code != 0);
    QVERIFY2(two_devices.err.contains("each worker rank is one worker on one device"), qPrintable(two_devices.err));
  }
};

QTEST_GUILESS_MAIN(TestParameterServerProcesses)
#include "test_parameter_server_processes.moc"
