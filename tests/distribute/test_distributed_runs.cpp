// End to end: the C++ custom training loop example and strata-run under each
// strategy, as separate processes.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include "data/FashionMnist.h"
#include "data/IdxReader.h"
#include "engine/TestUtil.h"

class TestDistributedRuns : public QObject {
  Q_OBJECT

  static QString bin(const char* rel) { return QStringLiteral(STRATA_BINARY_DIR "/") + rel; }
  static QString tiny() { return QStringLiteral(STRATA_SOURCE_DIR "/resources/examples/tiny-synthetic.strata"); }

  struct Result {
    int code;
    QString out, err;
  };
  static Result run(const QString& program, const QStringList& args) {
    QProcess p;
    p.start(program, args);
    if (!p.waitForFinished(300000)) return {-1, {}, "timeout"};
    return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
  }

  // The examples read the first 4,000 training and 1,000 test images of the
  // real Fashion-MNIST files, written here once (the runs use 4,000): all
  // 70,000 took most of each run under ThreadSanitizer (8 of 16 s).
  QTemporaryDir slice_;
  bool have_fashion_ = false;

  void write_slice(const std::string& stem, uint32_t n) {
    const std::string from = strata::fashion_mnist_dir();
    const strata::IdxArray images = strata::read_idx(from + "/" + stem + "-images-idx3-ubyte.gz");
    const strata::IdxArray labels = strata::read_idx(from + "/" + stem + "-labels-idx1-ubyte.gz");
    const auto rows = static_cast<uint32_t>(images.dims[1]), cols = static_cast<uint32_t>(images.dims[2]);
    const std::string to = slice_.path().toStdString() + "/" + stem;
    testutil::write_file(to + "-images-idx3-ubyte",
                         testutil::idx_bytes({n, rows, cols}, {images.data.begin(), images.data.begin() + n * rows * cols}));
    testutil::write_file(to + "-labels-idx1-ubyte", testutil::idx_bytes({n}, {labels.data.begin(), labels.data.begin() + n}));
  }

private slots:
  void initTestCase() {
    have_fashion_ = QFile::exists(QString::fromStdString(strata::fashion_mnist_dir()) + "/train-images-idx3-ubyte.gz");
    if (!have_fashion_) return;
    write_slice("train", 4000);
    write_slice("t10k", 1000);
    qputenv("STRATA_FASHION_MNIST_DIR", slice_.path().toUtf8());  // the examples' processes inherit it
  }

  void custom_training_loop_runs_data() {
    QTest::addColumn<QStringList>("devices");
    QTest::newRow("2 cpu replicas") << QStringList{"--replicas", "2"};
    QTest::newRow("2 sim replicas") << QStringList{"--devices", "sim:0,sim:1"};
  }
  void custom_training_loop_runs() {
    QFETCH(QStringList, devices);
    if (!have_fashion_) QSKIP("Fashion-MNIST is not installed (apt install dataset-fashion-mnist)");
    auto r = run(bin("examples/custom_training_loop"), QStringList{"--epochs", "2", "--examples", "4000"} + devices);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("Number of devices: 2"));
    QRegularExpression epoch("Epoch (\\d+): Loss = ([0-9.]+)");
    auto it = epoch.globalMatch(r.out);
    QList<double> losses;
    while (it.hasNext()) losses << it.next().captured(2).toDouble();
    QCOMPARE(losses.size(), 2);
    QVERIFY2(losses[1] < losses[0], qPrintable(r.out));
  }

  void parameter_server_example_runs_data() {
    QTest::addColumn<QStringList>("devices");
    QTest::newRow("3 cpu workers") << QStringList{"--workers", "3"};
    QTest::newRow("3 sim workers") << QStringList{"--devices", "sim:0,sim:1,sim:2"};
  }
  void parameter_server_example_runs() {
    QFETCH(QStringList, devices);
    if (!have_fashion_) QSKIP("Fashion-MNIST is not installed (apt install dataset-fashion-mnist)");
    auto r = run(bin("examples/parameter_server_training"),
                 QStringList{"--epochs", "2", "--examples", "4000", "--servers", "2", "--staleness", "1"} + devices);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("Workers: 3, parameter servers: 2"));
    QRegularExpression epoch("Epoch (\\d+): Loss = ([0-9.]+), Accuracy = ([0-9.]+), max staleness (\\d+)");
    auto it = epoch.globalMatch(r.out);
    QList<double> losses;
    while (it.hasNext()) {
      auto m = it.next();
      losses << m.captured(2).toDouble();
      QVERIFY2(m.captured(4).toInt() <= 1, qPrintable(r.out));
    }
    QCOMPARE(losses.size(), 2);
    QVERIFY2(losses[1] < losses[0], qPrintable(r.out));
  }

  void strata_run_each_strategy_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<QString>("devices");
    QTest::addColumn<int>("replicas");
    QTest::newRow("one_device") << "one_device" << "cpu:0" << 1;
    QTest::newRow("mirrored x2") << "mirrored" << "cpu:0,cpu:1" << 2;
    QTest::newRow("mirrored x3") << "mirrored" << "cpu:0,cpu:1,cpu:2" << 3;
    QTest::newRow("central_storage x2") << "central_storage" << "cpu:0,cpu:1" << 2;
    QTest::newRow("parameter_server x2") << "parameter_server" << "cpu:0,cpu:1" << 2;
  }
  void strata_run_each_strategy() {
    QFETCH(QString, strategy);
    QFETCH(QString, devices);
    QFETCH(int, replicas);
    auto r = run(bin("app/strata-run"), {tiny(), "--events", "jsonl", "--no-run-dir", "--strategy", strategy, "--devices", devices});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto lines = r.out.split('\n', Qt::SkipEmptyParts);
    QVERIFY(!lines.isEmpty());
    auto first = QJsonDocument::fromJson(lines.first().toUtf8()).object();
    QCOMPARE(first["type"].toString(), QString("run_started"));
    QCOMPARE(first["strategy"].toString(), strategy);
    QCOMPARE(first["replicas"].toInt(), replicas);
    int steps = 0;
    double last_val = 0;
    for (auto& l : lines) {
      auto o = QJsonDocument::fromJson(l.toUtf8()).object();
      if (o["type"] == "step") {
        ++steps;
        const auto losses = o["replica_losses"].toArray();
        QCOMPARE(losses.size(), replicas);
        for (auto v : losses) QVERIFY(v.toDouble() >= 0);
      }
      if (o["type"] == "epoch") last_val = o["val_accuracy"].toDouble();
    }
    QCOMPARE(steps, 3 * first["steps_per_epoch"].toInt());
    QVERIFY2(last_val > 0.9, qPrintable(QString::number(last_val)));
    QCOMPARE(QJsonDocument::fromJson(lines.last().toUtf8()).object()["status"].toString(), QString("completed"));
  }

  void text_mode_shows_replica_losses() {
    auto r = run(bin("app/strata-run"), {tiny(), "--no-run-dir", "--strategy", "mirrored", "--devices", "cpu:0,cpu:1", "--epochs", "1"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    // "loss 0.1234 [0.1200 0.1268]": reduced then per replica.
    QVERIFY2(QRegularExpression("loss [0-9.]+ \\[[0-9.]+ [0-9.]+\\]").match(r.out).hasMatch(), qPrintable(r.out));
    QVERIFY(r.out.contains("strategy mirrored, 2 replicas (cpu:0,cpu:1)"));
  }

  void bad_strategy_options_exit_2_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    QTest::newRow("unknown strategy") << QStringList{"--strategy", "warp"} << "strategy 'warp' does not exist";
    QTest::newRow("unknown device") << QStringList{"--strategy", "mirrored", "--devices", "cpu:0,cpu:999"} << "cpu:999 does not exist";
    QTest::newRow("repeated device") << QStringList{"--strategy", "mirrored", "--devices", "cpu:1,cpu:1"} << "listed twice";
    QTest::newRow("zero replicas") << QStringList{"--strategy", "mirrored", "--devices", ""} << "zero replicas";
    QTest::newRow("more replicas than batch") << QStringList{"--strategy", "mirrored", "--devices", "cpu:0,cpu:1,cpu:2", "--batch-size", "2"} << "smaller than the 3 replicas";
    QTest::newRow("one_device with two") << QStringList{"--strategy", "one_device", "--devices", "cpu:0,cpu:1"} << "exactly one device";
  }
  void bad_strategy_options_exit_2() {
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    auto r = run(bin("app/strata-run"), QStringList{tiny(), "--no-run-dir"} + args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(message), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestDistributedRuns)
#include "test_distributed_runs.moc"
