// strata-run end to end on the tiny project: text and JSON Lines output, the
// run folder, every bad input (exit 2, a clear message on stderr), divergence
// (exit 1) and Ctrl-C (exit 130 after the current step).
#include <QtTest/QtTest>

#include <signal.h>
#include <sys/types.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

namespace {

const QString kRunner = QStringLiteral(STRATA_BINARY_DIR "/app/strata-run");
const QString kTiny = QStringLiteral(STRATA_SOURCE_DIR "/resources/examples/tiny-synthetic.strata");

struct Result {
  int exit_code = -1;
  QProcess::ExitStatus status = QProcess::CrashExit;
  QString out, err;
  QStringList out_lines() const { return out.split('\n', Qt::SkipEmptyParts); }
};

// A generous guard, not a timing assertion: the tiny project trains in well
// under a second.
constexpr int kGuardMs = 120000;

Result run(const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(kRunner, args);
  Result r;
  if (!p.waitForStarted(kGuardMs)) {
    r.err = "could not start " + kRunner;
    return r;
  }
  p.closeWriteChannel();
  p.waitForFinished(kGuardMs);
  r.status = p.exitStatus();
  r.exit_code = p.exitCode();
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

QString describe(const Result& r) {
  return QString("exit %1 (%2)\n--- stdout ---\n%3\n--- stderr ---\n%4")
      .arg(r.exit_code)
      .arg(r.status == QProcess::NormalExit ? "normal" : "crashed")
      .arg(r.out.left(3000), r.err.left(3000));
}

QJsonObject tiny_project() {
  QFile f(kTiny);
  f.open(QIODevice::ReadOnly);
  return QJsonDocument::fromJson(f.readAll()).object();
}

// Sets a value at a '/'-separated path ("training/optimizer/type", "model/layers/1/units").
QJsonValue set_path(QJsonValue node, QStringList path, const QJsonValue& value) {
  if (path.isEmpty()) return value;
  const QString key = path.takeFirst();
  if (node.isArray()) {
    QJsonArray a = node.toArray();
    const int i = key.toInt();
    a[i] = set_path(a[i], path, value);
    return a;
  }
  QJsonObject o = node.toObject();
  o[key] = set_path(o[key], path, value);
  return o;
}

}  // namespace

class TestStrataRun : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;

  QString write_project(const QString& name, const QJsonObject& project) {
    const QString p = tmp_.filePath(name);
    QFile f(p);
    f.open(QIODevice::WriteOnly | QIODevice::Truncate);
    f.write(QJsonDocument(project).toJson());
    return p;
  }
  QString write_project(const QString& name, const QString& path, const QJsonValue& value) {
    return write_project(name, set_path(tiny_project(), path.split('/'), value).toObject());
  }
  void write_bytes(const QString& p, const QByteArray& bytes) {
    QFile f(p);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(bytes);
  }
  // A bad-input run: exit 2, no crash, stderr names the problem, and nothing
  // was trained.
  void expect_bad_input(const QStringList& args, const QStringList& needles) {
    Result r = run(args);
    QVERIFY2(r.status == QProcess::NormalExit, qPrintable(describe(r)));
    QVERIFY2(r.exit_code == 2, qPrintable(describe(r)));
    QVERIFY2(r.err.startsWith("strata-run: "), qPrintable(describe(r)));
    for (auto& n : needles) QVERIFY2(r.err.contains(n), qPrintable("stderr lacks '" + n + "'\n" + describe(r)));
    QVERIFY2(!r.out.contains("\"type\":\"step\"") && !r.out.contains("Epoch 1"), qPrintable(describe(r)));
  }

private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    QVERIFY2(QFile::exists(kRunner), qPrintable(kRunner + " is not built"));
    QVERIFY(QFile::exists(kTiny));
  }

  void help_and_usage() {
    Result r = run({"--help"});
    QCOMPARE(r.exit_code, 0);
    QVERIFY(r.out.contains("exit codes"));
    r = run({});
    QCOMPARE(r.exit_code, 2);
    QVERIFY(r.err.contains("usage"));
  }

  void text_mode() {
    const QString dir = tmp_.filePath("text-run");
    Result r = run({kTiny, "--events", "text", "--run-dir", dir});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    const QStringList lines = r.out_lines();
    for (int e = 1; e <= 3; ++e) {
      const QString prefix = QString("Epoch %1:").arg(e);
      QVERIFY2(std::any_of(lines.begin(), lines.end(), [&](const QString& l) { return l.startsWith(prefix) && l.contains("loss"); }),
               qPrintable("no '" + prefix + "' summary line\n" + describe(r)));
    }
    QVERIFY2(r.out.contains("run folder: " + dir), qPrintable(describe(r)));
    QVERIFY2(r.out.contains("completed"), qPrintable(describe(r)));
    QVERIFY(r.out.contains("samples/s"));
    QVERIFY(QFile::exists(dir + "/events.jsonl"));
  }

  // The device discipline end to end: every strategy trains with its replicas
  // on the strict simulated accelerator, and mirrored there equals mirrored on
  // the cpu (the same kernels in the same order) to the printed digits.
  void trains_on_simulated_devices() {
    auto last_epoch = [](const Result& r) {
      for (const QString& l : r.out_lines())
        if (l.startsWith("Epoch 3:")) return l.section('(', 0, 0);
      return QString();
    };
    const Result cpu = run({kTiny, "--no-run-dir", "--strategy", "mirrored", "--devices", "cpu:0,cpu:1"});
    const Result sim = run({kTiny, "--no-run-dir", "--strategy", "mirrored", "--devices", "sim:0,sim:1"});
    QVERIFY2(sim.exit_code == 0, qPrintable(describe(sim)));
    QVERIFY2(!last_epoch(sim).isEmpty() && last_epoch(sim) == last_epoch(cpu), qPrintable(describe(sim) + describe(cpu)));
    for (const QStringList& strategy : {QStringList{"one_device", "sim:1"}, QStringList{"central_storage", "sim:0,sim:1,sim:2"},
                                        QStringList{"parameter_server", "sim:0,sim:1"}}) {
      const Result r = run({kTiny, "--no-run-dir", "--strategy", strategy[0], "--devices", strategy[1]});
      QVERIFY2(r.exit_code == 0 && r.out.contains("completed"), qPrintable(describe(r)));
    }
  }

  void jsonl_mode_and_run_folder() {
    const QString dir = tmp_.filePath("jsonl-run");
    Result r = run({kTiny, "--events", "jsonl", "--run-dir", dir, "--epochs", "2"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    const QStringList lines = r.out_lines();
    QVERIFY(lines.size() >= 4);
    QStringList types;
    for (const QString& l : lines) {
      QJsonParseError err{};
      const QJsonDocument d = QJsonDocument::fromJson(l.toUtf8(), &err);
      QVERIFY2(err.error == QJsonParseError::NoError && d.isObject(), qPrintable("not a JSON line: " + l));
      QVERIFY2(d.object().contains("type"), qPrintable(l));
      types << d.object()["type"].toString();
    }
    QCOMPARE(types.first(), QString("run_started"));
    QCOMPARE(types.last(), QString("finished"));
    QCOMPARE(types.count("epoch"), 2);
    const QJsonObject started = QJsonDocument::fromJson(lines.first().toUtf8()).object();
    QCOMPARE(types.count("step"), 2 * started["steps_per_epoch"].toInt());
    const QJsonObject fin = QJsonDocument::fromJson(lines.last().toUtf8()).object();
    QCOMPARE(fin["status"].toString(), QString("completed"));
    QCOMPARE(fin["epochs_completed"].toInt(), 2);

    // The run folder holds the project as run, every event and the final metrics.
    QFile config(dir + "/config.json"), events(dir + "/events.jsonl"), metrics(dir + "/metrics.json");
    QVERIFY(config.open(QIODevice::ReadOnly));
    QVERIFY(events.open(QIODevice::ReadOnly));
    QVERIFY(metrics.open(QIODevice::ReadOnly));
    const QJsonObject cfg = QJsonDocument::fromJson(config.readAll()).object();
    QCOMPARE(cfg["format"].toString(), QString("strata-project"));
    QCOMPARE(cfg["training"].toObject()["epochs"].toInt(), 2);  // the override is what ran
    const QStringList logged = QString::fromUtf8(events.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(logged, lines);
    const QJsonObject m = QJsonDocument::fromJson(metrics.readAll()).object();
    QCOMPARE(m["status"].toString(), QString("completed"));
    QCOMPARE(m["steps"].toInt(), types.count("step"));
    QVERIFY(m["final_epoch"].toObject().contains("val_accuracy"));
  }

  void default_run_folder_beside_project() {
    const QString project = write_project("beside.strata", tiny_project());
    Result r = run({project, "--events", "jsonl", "--epochs", "1"});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    const QDir runs(tmp_.filePath("beside.runs"));
    QVERIFY(runs.exists());
    const QStringList entries = runs.entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(entries.size(), 1);
    QVERIFY(QFile::exists(runs.filePath(entries.first() + "/metrics.json")));
    // --no-run-dir writes nothing.
    Result r2 = run({project, "--events", "jsonl", "--epochs", "1", "--no-run-dir"});
    QCOMPARE(r2.exit_code, 0);
    QCOMPARE(runs.entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), 1);
  }

  // ---- bad input: exit 2 --------------------------------------------------------

  void missing_project_file() {
    const QString p = tmp_.filePath("nope.strata");
    expect_bad_input({p, "--no-run-dir"}, {p, "cannot open"});
    // A folder is not a project file.
    expect_bad_input({tmp_.path(), "--no-run-dir"}, {tmp_.path()});
  }

  void project_not_json() {
    const QString p = tmp_.filePath("garbage.strata");
    write_bytes(p, "{ this is not json");
    expect_bad_input({p, "--no-run-dir"}, {p, "not valid JSON"});
  }

  void project_wrong_types() {
    const QString p = write_project("types.strata", "training/epochs", "three");
    expect_bad_input({p, "--no-run-dir"}, {p, "training.epochs: must be an integer"});
    const QString q = write_project("types2.strata", "training/optimizer/learning_rate", QJsonArray{0.1});
    expect_bad_input({q, "--no-run-dir"}, {"training.optimizer.learning_rate: must be a number"});
  }

  void project_unknown_layer() {
    const QString p = write_project("layer.strata", "model/layers/1/type", "conv9d");
    expect_bad_input({p, "--no-run-dir"}, {"model.layers[1].type: unknown layer 'conv9d'"});
  }

  void project_negative_size() {
    const QString p = write_project("negative.strata", "model/layers/1/units", -3);
    expect_bad_input({p, "--no-run-dir"}, {"model.layers[1].units: must be a positive integer, got -3"});
    const QString q = write_project("negative2.strata", "training/batch_size", -50);
    expect_bad_input({q, "--no-run-dir"}, {"training.batch_size: must be a positive integer, got -50"});
  }

  void unwritable_run_folder() {
    expect_bad_input({kTiny, "--run-dir", "/proc/strata-test/run"}, {"/proc/strata-test/run"});
    // Below a regular file (fails for root too).
    const QString blocker = tmp_.filePath("blocker");
    write_bytes(blocker, "x");
    expect_bad_input({kTiny, "--run-dir", blocker + "/run"}, {blocker + "/run", "run folder"});
  }

  // --trace writes a Chrome trace file and step_spans events; --merge-traces
  // puts trace files on one clock; a trace path that cannot be written is
  // bad input naming it, before training starts.
  void trace_file_and_merge() {
    const QString trace = tmp_.filePath("trace.json");
    const Result r = run(
        {kTiny, "--no-run-dir", "--events", "jsonl", "--strategy", "mirrored", "--devices", "cpu:0,cpu:1", "--trace", trace});
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    int spans_events = 0, steps = 0;
    for (const QString& line : r.out_lines()) {
      const QJsonObject e = QJsonDocument::fromJson(line.toUtf8()).object();
      steps += e["type"] == "step";
      if (e["type"] != "step_spans") continue;
      ++spans_events;
      QCOMPARE(e["lanes"].toArray().size(), 3);  // two replicas and the run
    }
    QVERIFY(steps > 0);
    QCOMPARE(spans_events, steps);
    QFile f(trace);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject file = QJsonDocument::fromJson(f.readAll()).object();
    QVERIFY(file["otherData"].toObject().contains("strata_trace"));
    QVERIFY(file["traceEvents"].toArray().size() > steps * 10);

    const QString merged = tmp_.filePath("merged.json");
    const Result m = run({"--merge-traces", merged, trace});
    QVERIFY2(m.exit_code == 0 && QFile::exists(merged), qPrintable(describe(m)));
    expect_bad_input({"--merge-traces", merged, kTiny}, {kTiny, "is not a Strata trace file"});
    expect_bad_input({kTiny, "--no-run-dir", "--trace", "/proc/strata-test/trace.json"}, {"/proc/strata-test/trace.json"});
  }

  // --device-lanes: a simulated accelerator's own lanes in every step, or none.
  void device_lanes_option() {
    const QString trace = tmp_.filePath("device-trace.json");
    for (const QString& mode : {QString("every-step"), QString("off")}) {
      const Result r = run(
          {kTiny, "--no-run-dir", "--events", "jsonl", "--devices", "sim:0", "--trace", trace, "--device-lanes", mode});
      QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
      int spans_events = 0, with_device = 0;
      for (const QString& line : r.out_lines()) {
        const QJsonObject e = QJsonDocument::fromJson(line.toUtf8()).object();
        if (e["type"] != "step_spans") continue;
        ++spans_events;
        with_device += e["lanes"].toArray().contains(QJsonValue("replica 0 device"));
      }
      QVERIFY(spans_events > 0);
      QCOMPARE(with_device, mode == "off" ? 0 : spans_events);
    }
    expect_bad_input({kTiny, "--no-run-dir", "--trace", trace, "--device-lanes", "sometimes"},
                     {"--device-lanes", "sometimes"});
  }

  // --no-gradient-branches: the weight gradients in order with the rest;
  // the same losses as with the side branch (sim:0 runs it on a second thread).
  void gradient_branches_option() {
    QStringList losses[2];
    for (int off = 0; off < 2; ++off) {
      QStringList args = {kTiny, "--no-run-dir", "--events", "jsonl", "--devices", "sim:0", "--no-graphs"};
      if (off) args << "--no-gradient-branches";
      const Result r = run(args);
      QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
      for (const QString& line : r.out_lines()) {
        const QJsonObject e = QJsonDocument::fromJson(line.toUtf8()).object();
        if (e["type"] == "step") losses[off] << QString::number(e["loss"].toDouble(), 'g', 17);
      }
    }
    QVERIFY(!losses[0].isEmpty());
    QCOMPARE(losses[1], losses[0]);
  }

  void unknown_strategy() { expect_bad_input({kTiny, "--no-run-dir", "--strategy", "warp_drive"}, {"warp_drive", "does not exist"}); }

  void bad_devices() {
    expect_bad_input({kTiny, "--no-run-dir", "--devices", "cpu:99"}, {"cpu:99", "does not exist"});
    expect_bad_input({kTiny, "--no-run-dir", "--strategy", "mirrored", "--devices", "cpu:0,cpu:0"}, {"cpu:0", "listed twice"});
    expect_bad_input({kTiny, "--no-run-dir", "--devices", "cpu:0,cpu:0"}, {"one_device"});
    expect_bad_input({kTiny, "--no-run-dir", "--devices", "tpu:1"}, {"tpu:1"});
    expect_bad_input({kTiny, "--no-run-dir", "--devices", ""}, {});
  }

  // --version; --learning-rate and --seed override the project (the run
  // with another seed starts from other weights; the learning rate is the
  // one every step reports).
  void version_learning_rate_and_seed() {
    Result v = run({"--version"});
    QCOMPARE(v.exit_code, 0);
    QVERIFY2(QRegularExpression("^strata-run \\d+\\.\\d+\\.\\d+\n$").match(v.out).hasMatch(), qPrintable(v.out));
    const QStringList base{kTiny, "--no-run-dir", "--events", "jsonl", "--epochs", "1", "--max-steps", "1"};
    const auto first_step = [](const Result& r) {
      for (const QString& line : r.out.split('\n'))
        if (line.contains("\"type\":\"step\"")) return QJsonDocument::fromJson(line.toUtf8()).object();
      return QJsonObject{};
    };
    const QJsonObject plain = first_step(run(base));
    const QJsonObject lr = first_step(run(base + QStringList{"--learning-rate", "0.25"}));
    QCOMPARE(lr["lr"].toDouble(), 0.25);
    QCOMPARE(lr["loss"].toDouble(), plain["loss"].toDouble());  // same seed, same first loss
    const QJsonObject seeded = first_step(run(base + QStringList{"--seed", "12345"}));
    QVERIFY(!seeded.isEmpty() && seeded["loss"].toDouble() != plain["loss"].toDouble());
    expect_bad_input({kTiny, "--no-run-dir", "--learning-rate", "0"}, {"--learning-rate", "positive"});
    expect_bad_input({kTiny, "--no-run-dir", "--learning-rate", "fast"}, {"--learning-rate", "fast"});
    expect_bad_input({kTiny, "--no-run-dir", "--seed", "-1"}, {"--seed", "-1"});
  }

  // Schedule and callback flags: the step rates follow the schedule, early
  // stopping ends the run with exit 0 saying why; bad values name the flag
  // or the setting.
  void schedules_and_callbacks() {
    const QStringList base{kTiny, "--no-run-dir", "--events", "jsonl"};
    const Result r = run(base + QStringList{"--epochs", "20", "--lr-schedule", "step", "--warmup-epochs", "0.5",
                                            "--early-stopping", "val_accuracy:2", "--reduce-lr-on-plateau", "loss:1:0.5"});
    QCOMPARE(r.exit_code, 0);
    std::vector<double> lrs;
    QJsonObject finished;
    for (const QString& line : r.out.split('\n')) {
      const QJsonObject o = QJsonDocument::fromJson(line.toUtf8()).object();
      if (o["type"] == "step") lrs.push_back(o["lr"].toDouble());
      if (o["type"] == "finished") finished = o;
    }
    QVERIFY(lrs.size() >= 16);
    QVERIFY(lrs[0] < lrs[7] && lrs[7] == lrs[15]);  // the warm-up's half epoch (8 of 16 steps), then flat
    // The tiny set is learnt perfectly in epoch 1; no later epoch beats that.
    QCOMPARE(finished["status"].toString(), QString("completed"));
    QCOMPARE(finished["epochs_completed"].toInt(), 3);
    QVERIFY(finished["stopped_early"].toBool());
    QCOMPARE(finished["message"].toString(),
             QString("stopped early after epoch 3: val_accuracy has not improved for 2 epochs (best 1 at epoch 1)"));
    // Decided at the last epoch anyway: a plain completed run.
    const Result last = run(base + QStringList{"--epochs", "3", "--early-stopping", "val_accuracy:2"});
    QVERIFY2(last.out.contains("\"message\":\"completed 3 epochs\"") && !last.out.contains("stopped_early"), qPrintable(last.out));
    expect_bad_input(base + QStringList{"--lr-schedule", "linear"}, {"training.lr_schedule.type", "linear"});
    expect_bad_input(base + QStringList{"--early-stopping", "val_loss"}, {"--early-stopping", "METRIC:PATIENCE"});
    expect_bad_input(base + QStringList{"--early-stopping", "val_los:3"}, {"training.early_stopping.monitor", "val_los"});
    expect_bad_input(base + QStringList{"--reduce-lr-on-plateau", "loss:2:1.5"}, {"training.reduce_lr_on_plateau.factor"});
    expect_bad_input(base + QStringList{"--warmup-epochs", "x"}, {"--warmup-epochs", "'x'"});
  }

  // --list-devices: the CPU devices, the sim devices the environment asks
  // for with their memory, and the GPUs or why there are none; a bad setting
  // of the simulated devices is bad input naming the variable.
  void list_devices_names_each_device() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("STRATA_SIM_DEVICES", "2");
    env.insert("STRATA_SIM_MEMORY_GB", "3");
    const Result r = run({"--list-devices"}, env);
    QVERIFY2(r.status == QProcess::NormalExit && r.exit_code == 0, qPrintable(describe(r)));
    const QStringList lines = r.out_lines();
    QVERIFY2(lines.value(0).startsWith("cpu:0 "), qPrintable(describe(r)));
    QVERIFY2(lines.filter(QRegularExpression("^sim:[0-9] ")).size() == 2, qPrintable(describe(r)));
    QVERIFY2(lines.contains("sim:1   Simulated accelerator (testing), 3.0 GiB host memory, strict stream and memory checks"),
             qPrintable(describe(r)));
    QVERIFY2(!lines.filter(QRegularExpression("^gpu:[0-9] ")).isEmpty() ||
                 !lines.filter(QRegularExpression("^no GPU: .+")).isEmpty(),
             qPrintable(describe(r)));
    for (const auto& [name, value] : {std::pair{"STRATA_SIM_DEVICES", "lots"}, std::pair{"STRATA_SIM_MEMORY_GB", "0"}}) {
      QProcessEnvironment bad = env;
      bad.insert(name, value);
      const Result b = run({"--list-devices"}, bad);
      QVERIFY2(b.status == QProcess::NormalExit && b.exit_code == 2, qPrintable(describe(b)));
      QVERIFY2(b.err.startsWith(QString("strata-run: %1: expected ").arg(name)), qPrintable(describe(b)));
      QVERIFY2(b.err.contains(QString("got '%1'").arg(value)), qPrintable(describe(b)));
    }
  }

  void bad_options() {
    expect_bad_input({kTiny, "--no-run-dir", "--epochs", "abc"}, {"--epochs", "abc"});
    expect_bad_input({kTiny, "--no-run-dir", "--epochs", "0"}, {"--epochs"});
    expect_bad_input({kTiny, "--no-run-dir", "--events", "xml"}, {"--events"});
    expect_bad_input({kTiny, "--no-run-dir", "--frobnicate"}, {"--frobnicate"});
    expect_bad_input({kTiny, "--no-run-dir", "--run-dir"}, {"--run-dir", "needs a value"});
    // Contradicting flags are refused, not settled silently by one of them.
    const QString dir = tmp_.filePath("not-written");
    expect_bad_input({kTiny, "--run-dir", dir, "--no-run-dir"}, {"--run-dir", "--no-run-dir"});
    QVERIFY(!QFileInfo::exists(dir));
    expect_bad_input({kTiny, "--no-run-dir", "--run-name", "a"}, {"--run-name", "--no-run-dir"});
    expect_bad_input({kTiny, "--no-run-dir", "--resume"}, {"--resume", "--no-run-dir"});
  }

  void bad_parameter_server_options() {
    const QStringList ps{kTiny, "--no-run-dir", "--strategy", "parameter_server"};
    expect_bad_input(ps + QStringList{"--servers", "0"}, {"--servers", "at least 1"});
    expect_bad_input(ps + QStringList{"--staleness", "-3"}, {"--staleness", "-3"});
    expect_bad_input(ps + QStringList{"--staleness", "soon"}, {"--staleness", "soon"});
    expect_bad_input(ps + QStringList{"--servers", "9"}, {"9 servers", "4 variables"});
    expect_bad_input(ps + QStringList{"--fail-worker", "1"}, {"--fail-worker", "W@STEP"});
    expect_bad_input(ps + QStringList{"--fail-worker", "5@3"}, {"no worker 5"});
    expect_bad_input(ps + QStringList{"--straggler", "7"}, {"straggler", "replica 7 does not exist"});
    expect_bad_input({kTiny, "--no-run-dir", "--strategy", "mirrored", "--fail-worker", "0@3"}, {"only parameter_server"});
  }

  void bad_numeric_options() {
    // Zero or negative sizes given on the command line are bad input too, not
    // ignored, and the message says what the flag takes (not the type's limit).
    const std::pair<QStringList, QString> cases[] = {
        {{"--batch-size", "-5"}, "--batch-size: must be positive, got -5"},
        {{"--batch-size", "0"}, "--batch-size: must be positive, got 0"},
        {{"--batch-size", "-99999999999999999999"}, "--batch-size: must be positive, got -99999999999999999999"},
        {{"--max-steps", "-3"}, "--max-steps: must be 0 (whole epoch) or positive, got -3"},
        {{"--threads", "-2"}, "--threads: must be 0 (every core) or positive, got -2"},
        {{"--trace-max-mib", "-1"}, "--trace-max-mib: must be 0 (no limit) or positive, got -1"},
        {{"--fail-worker", "0@0"}, "--fail-worker: expected W@STEP with a first number >= 0 and a second >= 1, got '0@0'"},
        {{"--fail-replica", "x@3"}, "--fail-replica: expected R@STEP with a first number >= 0 and a second >= 1, got 'x@3'"},
        {{"--early-stopping", "loss:-99999999999999999999"},
         "--early-stopping: -99999999999999999999 is too small (at least -2147483648)"},
        {{"--straggler", "-1:3"}, "--straggler: replica must be >= 0, got -1"},
        // Too large for the field: refused, never wrapped (this one to batch 64).
        {{"--batch-size", "4294967360"}, "--batch-size: 4294967360 is too large (at most 2147483647)"},
        {{"--epochs", "99999999999999999999"}, "--epochs: 99999999999999999999 is too large"},
        {{"--min-shard-bytes", "99999999999999999999"}, "--min-shard-bytes: 99999999999999999999 is too large"},
        {{"--batch-size", " 64"}, "--batch-size: expected an integer, got ' 64'"},
        {{"--batch-size", "+64"}, "--batch-size: expected an integer, got '+64'"}};
    for (const auto& [opt, message] : cases) {
      Result r = run(QStringList{kTiny, "--no-run-dir", "--events", "jsonl", "--epochs", "1"} + opt);
      QVERIFY2(r.exit_code == 2 && r.err.contains(message), qPrintable(message + "\n" + describe(r)));
    }
  }

  void no_full_batch_is_bad_input() {
    // 100 synthetic examples -> 80 for training; batch 100 with drop_remainder
    // gives no step at all: bad input, reported cleanly.
    QJsonObject p = tiny_project();
    p = set_path(p, {"dataset", "synthetic_examples"}, 100).toObject();
    p = set_path(p, {"training", "drop_remainder"}, true).toObject();
    const QString path = write_project("no-steps.strata", p);
    Result r = run({path, "--no-run-dir", "--batch-size", "100"});
    QVERIFY2(r.status == QProcess::NormalExit && r.exit_code == 2 && r.err.contains("no full batch"),
             qPrintable(describe(r)));
  }

  void missing_dataset_file() {
    QJsonObject p = tiny_project();
    p["dataset"] = QJsonObject{{"kind", "idx"}, {"train_images", "no-such-dir/train-images.gz"}, {"train_labels", "no-such-dir/train-labels.gz"}};
    p["model"] = QJsonObject{{"layers", QJsonArray{QJsonObject{{"type", "flatten"}}, QJsonObject{{"type", "dense"}, {"units", 10}}}}};
    const QString path = write_project("missing-data.strata", p);
    // Relative dataset paths are taken from the project's folder, and the message names the file.
    expect_bad_input({path, "--no-run-dir"}, {tmp_.filePath("no-such-dir/train-images.gz")});
    QVERIFY(!QDir(tmp_.filePath("missing-data.runs")).exists());
    expect_bad_input({path}, {"train-images.gz"});
    QVERIFY2(!QDir(tmp_.filePath("missing-data.runs")).exists(), "bad input must not leave a run folder behind");
  }

  void corrupted_idx() {
    // 4 images of 2x2 and 4 labels, then the image file cut short.
    QByteArray images("\x00\x00\x08\x03\x00\x00\x00\x04\x00\x00\x00\x02\x00\x00\x00\x02", 16);
    images += QByteArray(16, '\x10');
    QByteArray labels("\x00\x00\x08\x01\x00\x00\x00\x04\x00\x01\x02\x03", 12);
    write_bytes(tmp_.filePath("c-images"), images.left(16 + 9));
    write_bytes(tmp_.filePath("c-labels"), labels);
    QJsonObject p = tiny_project();
    p["dataset"] = QJsonObject{{"kind", "idx"}, {"train_images", "c-images"}, {"train_labels", "c-labels"}};
    p["model"] = QJsonObject{{"layers", QJsonArray{QJsonObject{{"type", "flatten"}}, QJsonObject{{"type", "dense"}, {"units", 10}}}}};
    const QString path = write_project("corrupt.strata", p);
    expect_bad_input({path, "--no-run-dir"}, {tmp_.filePath("c-images"), "truncated"});

    // Wrong magic.
    QByteArray bad = images;
    bad[0] = 'P';
    bad[1] = 'K';
    write_bytes(tmp_.filePath("c-images"), bad);
    expect_bad_input({path, "--no-run-dir"}, {tmp_.filePath("c-images"), "magic"});

    // Image/label count mismatch: 4 images, 3 labels.
    write_bytes(tmp_.filePath("c-images"), images);
    write_bytes(tmp_.filePath("c-labels"), QByteArray("\x00\x00\x08\x01\x00\x00\x00\x03\x00\x01\x02", 11));
    expect_bad_input({path, "--no-run-dir"}, {"4 images", "3 labels"});

    // And the intact pair trains.
    write_bytes(tmp_.filePath("c-labels"), labels);
    Result ok = run({path, "--no-run-dir", "--events", "jsonl", "--epochs", "1", "--batch-size", "2"});
    QVERIFY2(ok.exit_code == 0, qPrintable(describe(ok)));
  }

  void csv_bad_cell() {
    write_bytes(tmp_.filePath("bad.csv"), "a,b,label\n1,2,0\n3,x,1\n");
    QJsonObject p = tiny_project();
    p["dataset"] = QJsonObject{{"kind", "csv"}, {"train_csv", "bad.csv"}};
    const QString path = write_project("csv.strata", p);
    expect_bad_input({path, "--no-run-dir"}, {tmp_.filePath("bad.csv") + ":3", "column 2", "'x'"});
  }

  // ---- training failures and interrupts -----------------------------------------

  void nan_divergence_exit_1() {
    QJsonObject p = tiny_project();
    p = set_path(p, {"training", "optimizer"}, QJsonObject{{"type", "sgd"}, {"learning_rate", 1e30}}).toObject();
    const QString path = write_project("nan.strata", p);
    for (const QString mode : {"text", "jsonl"}) {
      Result r = run({path, "--no-run-dir", "--events", mode});
      QVERIFY2(r.status == QProcess::NormalExit && r.exit_code == 1, qPrintable(describe(r)));
      const QString all = r.out + r.err;
      QVERIFY2(all.contains("NaN") || all.contains("infinite"), qPrintable(describe(r)));
      QVERIFY2(all.contains(QRegularExpression("at step \\d+")), qPrintable(describe(r)));
      if (mode == "jsonl") {
        const QJsonObject fin = QJsonDocument::fromJson(r.out_lines().last().toUtf8()).object();
        QCOMPARE(fin["type"].toString(), QString("finished"));
        QCOMPARE(fin["status"].toString(), QString("failed"));
        QVERIFY(fin["message"].toString().contains(QString("step %1").arg(fin["steps"].toInt())));
      }
    }
  }

  // --fail-replica R@STEP: replica R fails as step STEP starts, its peer
  // already in the step's all-reduce; exit 1, the message naming the replica,
  // its device and the step. Its bad forms are bad input.
  void failing_replica_exit_1() {
    Result r = run({kTiny, "--no-run-dir", "--events", "jsonl", "--strategy", "mirrored", "--devices", "cpu:0,cpu:1",
                    "--fail-replica", "1@3"});
    QVERIFY2(r.status == QProcess::NormalExit && r.exit_code == 1, qPrintable(describe(r)));
    const QJsonObject fin = QJsonDocument::fromJson(r.out_lines().last().toUtf8()).object();
    QCOMPARE(fin["type"].toString(), QString("finished"));
    QCOMPARE(fin["status"].toString(), QString("failed"));
    QVERIFY2(fin["message"].toString().contains("replica 1 (cpu:1) failed (injected at step 3)"), qPrintable(describe(r)));
    const QStringList mirrored{kTiny, "--no-run-dir", "--strategy", "mirrored", "--devices", "cpu:0,cpu:1"};
    expect_bad_input(mirrored + QStringList{"--fail-replica", "1"}, {"--fail-replica", "R@STEP"});
    expect_bad_input(mirrored + QStringList{"--fail-replica", "2@3"}, {"fail_replica", "replica 2 does not exist"});
    expect_bad_input({kTiny, "--no-run-dir", "--strategy", "parameter_server", "--fail-replica", "0@3"},
                     {"fail_replica", "fail_worker"});
  }

  // A model too large for the device: exit 1 (a training failure, not bad
  // input), typed as out of device memory in the finished event and the run
  // folder, the message naming the device and the remedy. On sim with 1 GiB:
  // the 2M-unit layer's activations at batch 50 alone take 400 MB each.
  void out_of_device_memory_exit_1() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("STRATA_SIM_DEVICES", "1");
    env.insert("STRATA_SIM_MEMORY_GB", "1");
    const QString path = write_project("huge.strata", "model/layers/0/units", 1 << 21);
    const QString dir = tmp_.filePath("oom-run");
    Result r = run({path, "--run-dir", dir, "--events", "jsonl", "--devices", "sim:0"}, env);
    QVERIFY2(r.status == QProcess::NormalExit && r.exit_code == 1, qPrintable(describe(r)));
    const QJsonObject fin = QJsonDocument::fromJson(r.out_lines().last().toUtf8()).object();
    QCOMPARE(fin["type"].toString(), QString("finished"));
    QCOMPARE(fin["status"].toString(), QString("failed"));
    QCOMPARE(fin["failure"].toString(), QString("out_of_device_memory"));
    for (const char* needle : {"sim:0", "out of device memory", "smaller batch"})
      QVERIFY2(fin["message"].toString().contains(needle), qPrintable(describe(r)));
    QFile metrics(dir + "/metrics.json");
    QVERIFY(metrics.open(QIODevice::ReadOnly));
    QCOMPARE(QJsonDocument::fromJson(metrics.readAll()).object()["failure"].toString(), QString("out_of_device_memory"));
  }

  void sigint_stops_after_current_step_data() {
    QTest::addColumn<int>("sig");
    QTest::addColumn<QString>("mode");
    QTest::newRow("SIGINT jsonl") << int(SIGINT) << "jsonl";
    QTest::newRow("SIGINT text") << int(SIGINT) << "text";
    QTest::newRow("SIGTERM jsonl") << int(SIGTERM) << "jsonl";
  }
  void sigint_stops_after_current_step() {
    QFETCH(int, sig);
    QFETCH(QString, mode);
    const QString dir = tmp_.filePath("interrupted-" + QString::number(sig) + mode);
    QProcess p;
    p.start(kRunner, {kTiny, "--events", mode, "--epochs", "100000", "--run-dir", dir});
    QVERIFY(p.waitForStarted(kGuardMs));
    // Wait until training is under way (the handler is installed by then).
    QByteArray out;
    const QByteArray marker = mode == "jsonl" ? "\"type\":\"step\"" : "Epoch 2/";
    while (!out.contains(marker) && p.state() == QProcess::Running) {
      p.waitForReadyRead(1000);
      out += p.readAllStandardOutput();
    }
    QVERIFY2(out.contains(marker), out.constData());
    QVERIFY(p.processId() > 0);  // kill(0, ...) would signal this test's own process group
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), sig), 0);
    QVERIFY(p.waitForFinished(kGuardMs));
    out += p.readAllStandardOutput();
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QVERIFY2(p.exitCode() == 130, qPrintable(QString("exit %1, stderr: %2").arg(p.exitCode()).arg(err)));
    const QStringList lines = QString::fromUtf8(out).split('\n', Qt::SkipEmptyParts);
    if (mode == "jsonl") {
      const QJsonObject fin = QJsonDocument::fromJson(lines.last().toUtf8()).object();
      QCOMPARE(fin["type"].toString(), QString("finished"));
      QCOMPARE(fin["status"].toString(), QString("stopped"));
      QVERIFY(fin["steps"].toInt() >= 1);
      // The last step event is complete and numbered as counted (an epoch
      // event may sit between it and the end if the stop fell on an epoch's end).
      QJsonObject last_step;
      for (const QString& l : lines) {
        const QJsonObject o = QJsonDocument::fromJson(l.toUtf8()).object();
        if (o["type"].toString() == "step") last_step = o;
      }
      QCOMPARE(last_step["step"].toInt(), fin["steps"].toInt());
    } else {
      QVERIFY2(err.contains("interrupted"), qPrintable(err));
      QVERIFY2(lines.last().startsWith("stopped"), qPrintable(lines.last()));
    }
    // The run folder records the stop too.
    QFile metrics(dir + "/metrics.json");
    QVERIFY(metrics.open(QIODevice::ReadOnly));
    QCOMPARE(QJsonDocument::fromJson(metrics.readAll()).object()["status"].toString(), QString("stopped"));
  }
};

QTEST_GUILESS_MAIN(TestStrataRun)
#include "test_strata_run.moc"
