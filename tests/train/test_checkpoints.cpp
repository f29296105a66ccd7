// Checkpoints: exact resume under every strategy, cross-strategy loading,
// corrupted files, a killed writer, and safetensors read by an independent reader.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/Error.h"
#include "engine/RecordingSink.h"
#include "project/ProjectFile.h"
#include "train/SafeTensors.h"
#include "train/Trainer.h"

using namespace strata;
namespace fs = std::filesystem;

namespace {
class StopAtStep final : public EventSink {
public:
  explicit StopAtStep(int64_t step) : step_(step) {}
  Trainer* trainer = nullptr;
  void emit(const Event& e) override {
    if (auto* s = std::get_if<StepEvent>(&e); s && s->step == step_ && trainer) trainer->request_stop();
  }

private:
  int64_t step_;
};

RunConfig config_for(const std::string& strategy, std::vector<std::string> devices) {
  RunConfig c;
  c.name = "ckpt-test";
  c.dataset.kind = "synthetic";
  c.dataset.synthetic_examples = 600;
  c.dataset.synthetic_features = 12;
  c.dataset.synthetic_classes = 3;
  c.layers = {nlohmann::json{{"type", "dense"}, {"units", 32}, {"activation", "relu"}},
              nlohmann::json{{"type", "dropout"}, {"rate", 0.25}},
              nlohmann::json{{"type", "dense"}, {"units", 16}, {"use_bias", false}},
              nlohmann::json{{"type", "batch_normalization"}, {"synchronized", true}},
              nlohmann::json{{"type", "tanh"}},
              nlohmann::json{{"type", "dense"}, {"units", 3}}};
  c.training.epochs = 2;
  c.training.batch_size = 45;  // 480 train examples: a partial last batch
  c.training.optimizer.learning_rate = 0.01f;
  c.training.seed = 3;
  c.training.threads = 2;
  c.strategy.name = strategy;
  c.strategy.devices = std::move(devices);
  return c;
}

std::map<std::string, std::vector<float>> weights_of(const std::string& ckpt) {
  std::map<std::string, std::vector<float>> out;
  for (auto& [n, t] : read_safetensors(ckpt + "/model.safetensors").tensors)
    out[n] = std::vector<float>(t.data(), t.data() + t.numel());
  for (auto& [n, t] : read_safetensors(ckpt + "/optimizer.safetensors").tensors)
    out[n] = std::vector<float>(t.data(), t.data() + t.numel());
  return out;
}

double max_relative(const std::map<std::string, std::vector<float>>& a, const std::map<std::string, std::vector<float>>& b) {
  double worst = 0;
  for (auto& [n, va] : a) {
    auto it = b.find(n);
    if (it == b.end() || it->second.size() != va.size()) return 1e9;
    double diff = 0, norm = 0;
    for (size_t i = 0; i < va.size(); ++i) {
      diff += (va[i] - it->second[i]) * double(va[i] - it->second[i]);
      norm += double(va[i]) * va[i];
    }
    worst = std::max(worst, std::sqrt(diff) / std::max(1e-12, std::sqrt(norm)));
  }
  return worst;
}

std::string train(const RunConfig& c, const std::string& dir, int64_t stop_at = -1, const std::string& from = {}) {
  StopAtStep sink(stop_at);
  Trainer t(c, sink);
  sink.trainer = &t;
  t.prepare();
  t.enable_checkpoints(dir);
  if (!from.empty()) t.restore(from);
  t.run();
  return *CheckpointManager::latest(dir);
}

QString bin(const char* rel) { return QStringLiteral(STRATA_BINARY_DIR "/") + rel; }
}  // namespace

class TestCheckpoints : public QObject {
  Q_OBJECT

private slots:
  void resume_is_exact_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<QStringList>("devices");
    QTest::newRow("one_device") << "one_device" << QStringList{"cpu:0"};
    QTest::newRow("mirrored x2") << "mirrored" << QStringList{"cpu:0", "cpu:1"};
    QTest::newRow("mirrored x3") << "mirrored" << QStringList{"cpu:0", "cpu:1", "cpu:2"};
    QTest::newRow("central_storage x2") << "central_storage" << QStringList{"cpu:0", "cpu:1"};
  }
  void resume_is_exact() {
    QFETCH(QString, strategy);
    QFETCH(QStringList, devices);
    // As test_checkpoints_sim, the replicas run on the simulated accelerator:
    // save copies device -> host, restore host -> device.
    const char* env = std::getenv("STRATA_TEST_DEVICES");
    const bool sim = env && std::string(env) == "sim";
    std::vector<std::string> devs;
    for (auto& d : devices) devs.push_back(sim ? QString(d).replace("cpu:", "sim:").toStdString() : d.toStdString());
    RunConfig c = config_for(strategy.toStdString(), devs);
    QTemporaryDir tmp;
    const std::string root = tmp.path().toStdString();

    const auto full = weights_of(train(c, root + "/full"));

    // Stop after epoch 1, resume for epoch 2.
    RunConfig one = c;
    one.training.epochs = 1;
    const std::string after_one = train(one, root + "/split");
    const auto resumed = weights_of(train(c, root + "/split", -1, after_one));
    const double d1 = max_relative(full, resumed);
    QVERIFY2(d1 == 0, qPrintable(QString("epoch boundary: relative difference %1").arg(d1)));

    // Stop in the middle of epoch 1 (as Stop/Ctrl-C do), resume.
    // A stop asked for when step 7 is reported takes effect after it; on
    // accelerators (replayed as a graph or op by op; not central storage,
    // whose variables live apart from the replicas) step 8 is by then
    // already queued (figures are read one step late), so it ends after 8.
    const std::string mid = train(c, root + "/mid", 7);
    const bool one_late = sim && strategy != "central_storage";
    QVERIFY2(QString::fromStdString(mid).endsWith(one_late ? "ckpt-8" : "ckpt-7"), mid.c_str());
    const auto resumed_mid = weights_of(train(c, root + "/mid", -1, mid));
    const double d2 = max_relative(full, resumed_mid);
    QVERIFY2(d2 == 0, qPrintable(QString("mid-epoch: relative difference %1").arg(d2)));
  }

  void replayed_steps_follow_the_cpu_bit_for_bit() {
    // What happens between replays of a captured step on an accelerator:
    // the partial last batch (its own loss scale), dropout's call numbers,
    // synchronised batch-norm statistics, a schedule and ReduceLROnPlateau
    // moving the rate, validation at each epoch's end, a stop and a resume
    // (re-captured). The simulated device's graphs, one replica and two
    // sharing the device, give the CPU's figures exactly.
    struct Result {
      std::vector<StepEvent> steps;
      std::vector<std::vector<float>> weights;
      bool captured = false;
      std::string checkpoint;
    };
    QTemporaryDir tmp;
    auto run = [&](const std::string& strategy, std::vector<std::string> devices, const std::string& dir,
                   int64_t stop_at = -1, const std::string& from = {}) {
      RunConfig c = config_for(strategy, std::move(devices));
      c.training.epochs = 3;
      c.training.threads = 1;
      c.training.lr_schedule.type = "cosine";
      c.training.lr_schedule.warmup_epochs = 1;
      c.training.lr_schedule.min_lr = 0.001;
      c.training.reduce_lr_on_plateau.enabled = true;  // every epoch: an improvement of 1e9 is never seen
      c.training.reduce_lr_on_plateau.monitor = "loss";
      c.training.reduce_lr_on_plateau.factor = 0.5;
      c.training.reduce_lr_on_plateau.patience = 1;
      c.training.reduce_lr_on_plateau.min_delta = 1e9;
      RecordingSink sink;
      StopAtStep stopper(stop_at);
      FanOutSink both;
      both.add(&sink);
      both.add(&stopper);
      Trainer t(c, both);
      stopper.trainer = &t;
      t.prepare();
      t.enable_checkpoints(tmp.path().toStdString() + "/" + dir);
      if (!from.empty()) t.restore(from);
      const FinishedEvent fin = t.run();
      if (fin.status != RunStatus::Completed && fin.status != RunStatus::Stopped) throw std::runtime_error(fin.message);
      Result r;
      r.steps = sink.all<StepEvent>();
      for (Variable* v : t.model().variables()) r.weights.push_back(v->value().to(Device{}).values());
      for (const LogEvent& log : sink.all<LogEvent>())
        r.captured |= log.message.find("captured as a graph") != std::string::npos;
      r.checkpoint = *CheckpointManager::latest(tmp.path().toStdString() + "/" + dir);
      return r;
    };
    auto same = [](const Result& a, const Result& b, size_t b_from, const char* what) {
      QVERIFY2(a.steps.size() + b_from == b.steps.size(), what);
      for (size_t i = 0; i < a.steps.size(); ++i) {
        QVERIFY2(a.steps[i].loss == b.steps[b_from + i].loss,
                 (std::string(what) + ": loss at step " + std::to_string(i + 1)).c_str());
        QVERIFY2(a.steps[i].lr == b.steps[b_from + i].lr,
                 (std::string(what) + ": lr at step " + std::to_string(i + 1)).c_str());
      }
      QVERIFY2(a.weights == b.weights, (std::string(what) + ": the final weights differ").c_str());
    };
    const Result cpu = run("one_device", {"cpu:0"}, "cpu");
    const Result sim = run("one_device", {"sim:0"}, "sim");
    QVERIFY(sim.captured);
    same(sim, cpu, 0, "sim:0 against cpu:0");
    const Result cpu2 = run("mirrored", {"cpu:0", "cpu:1"}, "cpu2");
    const Result shared = run("mirrored", {"sim:0", "sim:0"}, "shared");
    QVERIFY(shared.captured);
    same(shared, cpu2, 0, "sim:0,sim:0 against cpu:0,cpu:1");
    // Stopped after the epoch's partial last batch (step 11) and one more.
    const Result first = run("mirrored", {"sim:0", "sim:0"}, "resumed", 12);
    const Result rest = run("mirrored", {"sim:0", "sim:0"}, "resumed", -1, first.checkpoint);
    QVERIFY(rest.captured);
    same(rest, shared, shared.steps.size() - rest.steps.size(), "sim:0,sim:0 resumed against unbroken");
  }

  void loads_under_another_strategy() {
    QTemporaryDir tmp;
    const std::string ckpt = train(config_for("mirrored", {"cpu:0", "cpu:1"}), tmp.path().toStdString() + "/m2");
    const auto saved = weights_of(ckpt);
    for (auto [name, devs] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"one_device", {"cpu:0"}}, {"mirrored", {"cpu:0", "cpu:1", "cpu:2", "cpu:3"}}, {"central_storage", {"cpu:0", "cpu:1"}}}) {
      NullSink sink;
      Trainer t(config_for(name, devs), sink);
      t.prepare();
      t.restore(ckpt);
      for (auto* v : t.model().variables())
        for (int r = 0; r < v->num_components(); ++r) {
          const auto& want = saved.at(v->name());
          QVERIFY(std::equal(want.begin(), want.end(), v->component(r).data()));
        }
      RunConfig more = config_for(name, devs);
      more.training.epochs = 3;
      Trainer cont(more, sink);
      cont.prepare();
      cont.restore(ckpt);
      QCOMPARE(QString(status_name(cont.run().status)), QString("completed"));
    }
  }

  void a_step_checkpoint_due_at_an_epochs_end_is_written() {
    // 11 steps per epoch (480 examples, batch 45): every 11 steps falls on
    // each epoch's last step, which finish_step leaves to the epoch's end.
    QTemporaryDir tmp;
    RunConfig c = config_for("one_device", {"cpu:0"});
    c.training.epochs = 3;
    c.training.checkpoint.every_steps = 11;
    c.training.checkpoint.every_epoch = false;
    c.training.checkpoint.keep = 10;
    train(c, tmp.path().toStdString());
    for (int step : {11, 22, 33})
      QVERIFY2(fs::exists(tmp.path().toStdString() + "/ckpt-" + std::to_string(step) + "/state.json"),
               ("no checkpoint at step " + std::to_string(step)).c_str());
  }

  void corrupted_files_are_clear_errors() {
    QTemporaryDir tmp;
    const std::string ckpt = train(config_for("one_device", {}), tmp.path().toStdString() + "/c");
    const std::string model = ckpt + "/model.safetensors";
    std::string original;
    {
      std::ifstream in(model, std::ios::binary);
      original.assign(std::istreambuf_iterator<char>(in), {});
    }
    auto expect = [&](const QString& needle) {
      NullSink sink;
      Trainer t(config_for("one_device", {}), sink);
      t.prepare();
      const auto before = t.model().variables().front()->value().clone();
      try {
        t.restore(ckpt);
        QFAIL("no error");
      } catch (const Error& e) {
        QCOMPARE(e.kind(), ErrorKind::BadInput);
        QVERIFY2(QString(e.what()).contains(needle), e.what());
      }
      QVERIFY(std::equal(before.data(), before.data() + before.numel(), t.model().variables().front()->value().data()));
    };
    auto write = [&](const std::string& bytes) {
      std::ofstream out(model, std::ios::binary | std::ios::trunc);
      out << bytes;
    };
    write(original.substr(0, original.size() / 2));
    expect("model.safetensors");
    std::string flipped = original;
    flipped[flipped.size() - 5] ^= 0x10;
    write(flipped);
    expect("checksum mismatch");
    write(original);

    // A damaged layer state (dropout's counters) or optimizer iteration count
    // in a hand-edited checkpoint: clear errors naming the file, weights untouched.
    const std::string state_path = ckpt + "/state.json";
    std::string state_text;
    {
      std::ifstream in(state_path, std::ios::binary);
      state_text.assign(std::istreambuf_iterator<char>(in), {});
    }
    nlohmann::json state = nlohmann::json::parse(state_text);
    QVERIFY(state.contains("layers") && state["layers"].size() == 1);
    const std::string dropout = state["layers"].begin().key();
    const std::pair<nlohmann::json, std::string> damages[] = {
        {nlohmann::json{{"0", 1e30}}, "calls of replica 0 is not a count (1e+30)"},
        {nlohmann::json{{"x", 1}}, "'x' in 'calls' is not a replica index"},
        {nlohmann::json{{"-1", 1}}, "'-1' in 'calls' is not a replica index"},
        {nlohmann::json{{"0", "7"}}, "calls of replica 0 is not a count (\"7\")"}};
    for (const auto& [calls, message] : damages) {
      nlohmann::json damaged = state;
      damaged["layers"][dropout]["calls"] = calls;
      std::ofstream(state_path, std::ios::binary | std::ios::trunc) << damaged.dump();
      expect(QString::fromStdString(state_path + ": dropout layer '" + dropout + "': " + message));
    }
    const std::string opt_path = ckpt + "/optimizer.safetensors";
    const SafeTensorsFile opt_original = read_safetensors(opt_path);
    SafeTensorsFile opt = opt_original;
    opt.metadata["iterations"] = "many";
    write_safetensors(opt_path, opt);
    nlohmann::json unchecked = state;
    unchecked.erase("files");  // an older checkpoint's state, without the files' checksums
    std::ofstream(state_path, std::ios::binary | std::ios::trunc) << unchecked.dump();
    expect(QString::fromStdString(opt_path + ": the optimizer's iteration count is missing or not a count ('many')"));
    write_safetensors(opt_path, opt_original);
    std::ofstream(state_path, std::ios::binary | std::ios::trunc) << state_text;

    // A model whose shapes differ from the checkpoint's.
    RunConfig other = config_for("one_device", {});
    other.layers[0]["units"] = 33;
    NullSink sink;
    Trainer t(other, sink);
    t.prepare();
    try {
      t.restore(ckpt);
      QFAIL("no error");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("'dense/kernel' has shape (12, 32), the model expects (12, 33)"), e.what());
    }
    // Nothing of the checkpoint was touched by the failed loads.
    std::ifstream in(model, std::ios::binary);
    QVERIFY(std::string(std::istreambuf_iterator<char>(in), {}) == original);
  }

  void a_damaged_layer_state_changes_no_layer() {
    // Two dropout layers, the second's saved counters damaged: the first,
    // already given its saved counters when the second fails, gets its own
    // back, so the failed restore leaves the whole model as it was.
    QTemporaryDir tmp;
    RunConfig c = config_for("one_device", {});
    c.layers.insert(c.layers.begin() + 3, nlohmann::json{{"type", "dropout"}, {"rate", 0.1}});
    c.training.epochs = 1;
    const std::string ckpt = train(c, tmp.path().toStdString() + "/c");
    const std::string state_path = ckpt + "/state.json";
    nlohmann::json state = nlohmann::json::parse(std::ifstream(state_path));

    NullSink sink;
    Trainer t(c, sink);
    t.prepare();
    std::vector<nn::Layer*> dropouts;
    for (auto& l : t.model().layers())
      if (!l->extra_state().is_null()) dropouts.push_back(l.get());
    QCOMPARE(dropouts.size(), size_t(2));
    QVERIFY(state["layers"].contains(dropouts[0]->name()) && state["layers"].contains(dropouts[1]->name()));
    QVERIFY(state["layers"][dropouts[0]->name()] != dropouts[0]->extra_state());  // the restore would change it
    const nlohmann::json first_before = dropouts[0]->extra_state();
    state["layers"][dropouts[1]->name()]["calls"] = nlohmann::json{{"0", -3}};
    std::ofstream(state_path, std::ios::binary | std::ios::trunc) << state.dump();
    try {
      t.restore(ckpt);
      QFAIL("no error");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains(QString::fromStdString(dropouts[1]->name())), e.what());
    }
    QVERIFY2(dropouts[0]->extra_state() == first_before, dropouts[0]->extra_state().dump().c_str());
  }

  void incomplete_checkpoint_is_skipped() {
    QTemporaryDir tmp;
    const std::string root = tmp.path().toStdString() + "/r";
    const std::string good = train(config_for("one_device", {}), root);
    // What a writer killed mid-checkpoint leaves: a folder with a partial file
    // and no state.json; "latest" still names the good one.
    fs::create_directories(root + "/ckpt-999");
    std::ofstream(root + "/ckpt-999/model.safetensors.tmp-1") << "partial";
    QCOMPARE(*CheckpointManager::latest(root), good);
    fs::remove(root + "/latest");
    QCOMPARE(*CheckpointManager::latest(root), good);
  }

  void full_disk_keeps_the_previous_checkpoint() {
    // A checkpoint that runs out of space (a file-size limit: writes fail
    // with EFBIG as on a full disk with ENOSPC) is a warning naming the file;
    // the run goes on, `latest` and the previous checkpoint stay intact,
    // nothing half-written remains and no descriptor leaks.
    QTemporaryDir tmp;
    const std::string root = tmp.path().toStdString() + "/r";
    RunConfig c = config_for("one_device", {});
    c.layers[0]["units"] = 256;  // model.safetensors of about 20 KiB
    const std::string good = train(c, root);
    const auto good_weights = weights_of(good);
    auto listing = [&] {
      std::set<std::string> names;
      for (auto& e : fs::directory_iterator(root)) names.insert(e.path().filename().string());
      return names;
    };
    const auto before = listing();

    auto open_fds = [] { return std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator{}); };
    const auto fds_before = open_fds();
    RecordingSink sink;
    c.training.epochs = 3;
    {
      Trainer t(c, sink);
      t.prepare();
      t.enable_checkpoints(root);
      t.restore(good);
      rlimit old{};
      ::getrlimit(RLIMIT_FSIZE, &old);
      rlimit small = old;
      small.rlim_cur = 8 << 10;
      auto previous = std::signal(SIGXFSZ, SIG_IGN);
      ::setrlimit(RLIMIT_FSIZE, &small);
      t.run();
      ::setrlimit(RLIMIT_FSIZE, &old);
      std::signal(SIGXFSZ, previous);
    }
    QCOMPARE(std::string(status_name(sink.all<FinishedEvent>().back().status)), std::string("completed"));
    bool named = false;
    for (auto& l : sink.all<LogEvent>())
      named = named || (l.level == "warning" && l.message.find("checkpoint not written") != std::string::npos &&
                        l.message.find("model.safetensors") != std::string::npos &&
                        l.message.find("File too large") != std::string::npos);
    QVERIFY2(named, "no warning naming model.safetensors and 'File too large'");
    QCOMPARE(*CheckpointManager::latest(root), good);
    QVERIFY(max_relative(weights_of(good), good_weights) == 0.0);
    QCOMPARE(listing(), before);  // no ckpt-N, no half-written folder
    QCOMPARE(open_fds(), fds_before);
  }

  void killed_writer_resumes_from_good_checkpoint() {
    // A bigger model with a checkpoint every step: most of the time goes to
    // writing checkpoints, so SIGKILL at a random moment often lands mid-write.
    QTemporaryDir tmp;
    RunConfig c = config_for("one_device", {});
    c.layers[0]["units"] = 1024;
    c.training.epochs = 50;
    c.training.checkpoint.every_steps = 1;
    const std::string project = tmp.path().toStdString() + "/kill.strata";
    save_project(c, project);
    for (int round = 0; round < 3; ++round) {
      QProcess p;
      QStringList args{QString::fromStdString(project), "--events", "jsonl"};
      if (round > 0) args << "--resume";
      p.start(bin("app/strata-run"), args);
      QVERIFY(p.waitForStarted());
      // Killed once it has written a checkpoint (a loaded machine may take
      // longer than any fixed wait to start), then a little later each round.
      QByteArray out;
      QTRY_VERIFY_WITH_TIMEOUT((out += p.readAllStandardOutput()).contains("\"type\":\"checkpoint\""), 60000);
      QTest::qWait(100 + 150 * round);
      // processId() is 0 once the process has ended, and kill(0, ...) would
      // hit this test's own process group.
      if (const auto pid = static_cast<pid_t>(p.processId()); pid > 0) ::kill(pid, SIGKILL);
      p.waitForFinished();
    }
    // Whatever the kills left, the latest checkpoint is complete and loads.
    QProcess p;
    p.start(bin("app/strata-run"), {QString::fromStdString(project), "--resume", "--epochs", "1"});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    QVERIFY(p.readAllStandardOutput().contains("resuming from"));
  }

  // A header's shape and offsets must be whole numbers: a float such as
  // 1e30 is a clear error naming the tensor and the field (the JSON library
  // would have cast it to an integer, undefined behaviour, found by fuzzing).
  void safetensors_header_numbers_must_be_whole() {
    QTemporaryDir tmp;
    const std::string path = tmp.path().toStdString() + "/w.safetensors";
    auto with_header = [&](const std::string& header) {
      std::string bytes(8, '\0');
      for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
      std::ofstream(path, std::ios::binary) << bytes << header << std::string(16, '\0');
    };
    const std::pair<std::string, std::string> cases[] = {
        {R"({"w":{"dtype":"F32","shape":[1e30],"data_offsets":[0,4]}})", "tensor 'w': shape is not a list of whole numbers"},
        {R"({"w":{"dtype":"F32","shape":[-1e30],"data_offsets":[0,4]}})", "tensor 'w': shape is not a list of whole numbers"},
        {R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", "tensor 'w': shape is not a list of whole numbers"},
        {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,1e30]}})",
         "tensor 'w': data_offsets is not a list of whole numbers"},
        {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,4]}})",
         "tensor 'w': data_offsets is not a list of whole numbers"},
        {R"({"w":{"dtype":"F32","shape":1,"data_offsets":[0,4]}})", "tensor 'w': shape is not a list of whole numbers"},
    };
    for (const auto& [header, message] : cases) {
      with_header(header);
      try {
        read_safetensors(path);
        QFAIL(("no error for " + header).c_str());
      } catch (const Error& e) {
        QCOMPARE(e.kind(), ErrorKind::BadInput);
        QVERIFY2(std::string(e.what()).find(message) != std::string::npos, e.what());
      }
    }
    with_header(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})");  // the same file, well formed
    QCOMPARE(read_safetensors(path).find("w")->numel(), int64_t{4});
  }

  void independent_reader_parses_strata_safetensors() {
    if (QProcess::execute("/usr/bin/python3", {"-c", "import numpy"}) != 0) QSKIP("python3 with numpy is not installed");
    QTemporaryDir tmp;
    SafeTensorsFile f;
    f.metadata["format"] = "strata-weights";
    f.tensors.emplace_back("b", Tensor::from(Shape{3}, std::vector<float>{1.5f, -2.0f, 0.25f}));
    f.tensors.emplace_back("a/kernel", Tensor::from(Shape{2, 2}, std::vector<float>{1, 2, 3, 4}));
    f.tensors.emplace_back("steps", Tensor::from_ints(Shape{1}, std::vector<int32_t>{7}));
    const QString path = tmp.path() + "/w.safetensors";
    write_safetensors(path.toStdString(), f);
    QProcess p;
    p.start("/usr/bin/python3", {QStringLiteral(STRATA_SOURCE_DIR "/tests/train/read_safetensors.py"), path});
    QVERIFY(p.waitForFinished());
    const QString out = p.readAllStandardOutput();
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    QVERIFY2(out.contains("a/kernel 2x2 10\n"), qPrintable(out));
    QVERIFY2(out.contains("b 3 -0.25\n"), qPrintable(out));
    QVERIFY2(out.contains("steps 1 7\n"), qPrintable(out));
    QVERIFY2(out.contains("\"format\": \"strata-weights\""), qPrintable(out));
    auto back = read_safetensors(path.toStdString());
    QCOMPARE(back.find("b")->data()[2], 0.25f);
  }

  void evaluate_and_export_from_the_cli() {
    QTemporaryDir tmp;
    RunConfig c = config_for("one_device", {});
    const std::string project = tmp.path().toStdString() + "/e.strata";
    save_project(c, project);
    QProcess run;
    run.start(bin("app/strata-run"), {QString::fromStdString(project), "--run-dir", tmp.path() + "/run"});
    QVERIFY(run.waitForFinished(60000));
    QCOMPARE(run.exitCode(), 0);
    QProcess ev;
    ev.start(bin("app/strata-run"), {QString::fromStdString(project), "--evaluate", tmp.path() + "/run", "--events", "jsonl"});
    QVERIFY(ev.waitForFinished(60000));
    QCOMPARE(ev.exitCode(), 0);
    auto j = nlohmann::json::parse(ev.readAllStandardOutput().toStdString());
    QCOMPARE(j["confusion_matrix"].size(), size_t{3});
    int64_t total = 0;
    for (auto& row : j["confusion_matrix"])
      for (auto& v : row) total += v.get<int64_t>();
    QCOMPARE(total, j["examples"].get<int64_t>());
    QVERIFY(j["accuracy"].get<double>() > 0.5);
    QProcess ex;
    const QString out = tmp.path() + "/weights.safetensors";
    ex.start(bin("app/strata-run"), {QString::fromStdString(project), "--export-weights", tmp.path() + "/run", out});
    QVERIFY(ex.waitForFinished(60000));
    QCOMPARE(ex.exitCode(), 0);
    QVERIFY(read_safetensors(out.toStdString()).find("dense/kernel"));
    // Evaluating the exported file gives the same accuracy.
    QProcess ev2;
    ev2.start(bin("app/strata-run"), {QString::fromStdString(project), "--evaluate", out, "--events", "jsonl"});
    QVERIFY(ev2.waitForFinished(60000));
    QCOMPARE(nlohmann::json::parse(ev2.readAllStandardOutput().toStdString())["accuracy"], j["accuracy"]);
    // A checkpoint that does not exist, or a file that is no checkpoint (the
    // project itself: it was an internal error, exit 1), is exit code 2
    // naming the path.
    for (const QString& path : {tmp.path() + "/nothing", QString::fromStdString(project)}) {
      QProcess bad;
      bad.start(bin("app/strata-run"), {QString::fromStdString(project), "--evaluate", path});
      QVERIFY(bad.waitForFinished(60000));
      const QString err = bad.readAllStandardError();
      QVERIFY2(bad.exitCode() == 2, qPrintable(err));
      QVERIFY2(err.startsWith("strata-run: " + path + ": no checkpoint found"), qPrintable(err));
    }
  }
};

QTEST_GUILESS_MAIN(TestCheckpoints)
#include "test_checkpoints.moc"
