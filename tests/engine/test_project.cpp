// Project files (*.strata): validation with JSON paths, every problem at
// once, lossless load -> save -> load, atomic saves; run folders; the event
// JSON round trip.
#include <QtTest/QtTest>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "TestUtil.h"
#include "project/ProjectFile.h"
#include "project/RunDirectory.h"
#include "project/RunNotes.h"
#include "train/EventJson.h"
#include "train/StepFlushPolicy.h"

using namespace strata;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json valid_project() {
  return json::parse(R"({
    "format": "strata-project",
    "version": 1,
    "name": "test",
    "dataset": {"kind": "synthetic", "synthetic_examples": 200, "synthetic_features": 8, "synthetic_classes": 3},
    "model": {"layers": [{"type": "dense", "units": 16, "activation": "relu"}, {"type": "dense", "units": 3}]},
    "training": {"epochs": 2, "batch_size": 32, "optimizer": {"type": "sgd", "learning_rate": 0.1, "momentum": 0.9, "nesterov": true}},
    "strategy": {"name": "one_device", "devices": ["cpu:0"]}
  })");
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

bool contains_problem(const std::vector<std::string>& problems, const std::string& needle) {
  for (auto& p : problems)
    if (p.find(needle) != std::string::npos) return true;
  return false;
}

QString join(const std::vector<std::string>& v) {
  QStringList l;
  for (auto& s : v) l << QString::fromStdString(s);
  return l.join(" | ");
}

std::vector<std::string> leftover_temp_files(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) out.push_back(e.path().string());
  return out;
}

}  // namespace

class TestProject : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  std::string path(const std::string& name) const { return (tmp_.path() + "/").toStdString() + name; }

private slots:
  void initTestCase() { QVERIFY(tmp_.isValid()); }

  void valid_project_has_no_problems() {
    auto problems = validate_project(valid_project());
    QVERIFY2(problems.empty(), qPrintable(join(problems)));
    RunConfig c = project_from_json(valid_project());
    QCOMPARE(c.training.epochs, 2);
    QCOMPARE(c.training.batch_size, int64_t{32});
    QCOMPARE(QString::fromStdString(c.training.optimizer.type), QString("sgd"));
    QCOMPARE(c.training.optimizer.momentum, 0.9f);
    QVERIFY(c.training.optimizer.nesterov);
    QCOMPARE(c.layers.size(), size_t(2));
    QCOMPARE(c.dataset.synthetic_classes, 3);
  }

  void example_projects_are_valid() {
    // Every example the dashboard offers loads, with its layers, dataset and schedule.
    const struct {
      const char* name;
      size_t layers;
      const char* dataset;
      int epochs;
      int64_t batch;
    } examples[] = {{"tiny-synthetic", 2, "synthetic", 3, 50},
                    {"fashion-mlp", 4, "fashion_mnist", 10, 128},
                    {"fashion-cnn", 7, "fashion_mnist", 10, 64},
                    {"fashion-cnn-bn", 22, "fashion_mnist", 15, 64}};
    for (const auto& e : examples) {
      const RunConfig c = load_project(std::string(STRATA_SOURCE_DIR) + "/resources/examples/" + e.name + ".strata");
      QCOMPARE(c.layers.size(), e.layers);
      QCOMPARE(c.dataset.kind, std::string(e.dataset));
      QCOMPARE(c.training.epochs, e.epochs);
      QCOMPARE(c.training.batch_size, e.batch);
    }
  }

  void problems_data() {
    QTest::addColumn<QString>("pointer");  // JSON pointer to modify
    QTest::addColumn<QString>("value");    // new JSON value, or "<delete>"
    QTest::addColumn<QString>("expected");
    // Wrong types.
    QTest::newRow("epochs string") << "/training/epochs" << R"("ten")" << R"(training.epochs: must be an integer, got "ten")";
    QTest::newRow("batch float") << "/training/batch_size" << "12.5" << "training.batch_size: must be an integer, got 12.5";
    QTest::newRow("lr string") << "/training/optimizer/learning_rate" << R"("fast")" << "training.optimizer.learning_rate: must be a number";
    QTest::newRow("shuffle number") << "/training/shuffle" << "1" << "training.shuffle: must be true or false, got 1";
    QTest::newRow("name number") << "/name" << "5" << "name: must be a string";
    QTest::newRow("dataset array") << "/dataset" << "[]" << "dataset: must be an object";
    QTest::newRow("layers object") << "/model/layers" << "{}" << "model.layers: must be a non-empty array";
    QTest::newRow("layers empty") << "/model/layers" << "[]" << "model.layers: must be a non-empty array";
    QTest::newRow("layer not object") << "/model/layers/0" << "3" << "model.layers[0]: must be an object";
    QTest::newRow("units string") << "/model/layers/1/units" << R"("3")" << R"(model.layers[1].units: must be a positive integer, got "3")";
    QTest::newRow("activation number") << "/model/layers/0/activation" << "1" << "model.layers[0].activation: must be one of";
    QTest::newRow("devices string") << "/strategy/devices" << R"("cpu:0")" << "strategy.devices: must be an array";
    QTest::newRow("device number") << "/strategy/devices/0" << "0" << "strategy.devices[0]: must be a string";
    QTest::newRow("device bad") << "/strategy/devices/0" << R"("tpu:0")" << "strategy.devices[0]: device 'tpu:0'";
    // Unknown layer, negative and zero sizes, bad ranges and enums.
    QTest::newRow("unknown layer") << "/model/layers/1/type" << R"("conv9d")" << "model.layers[1].type: unknown layer 'conv9d'";
    QTest::newRow("layer without type") << "/model/layers/1/type" << "<delete>" << "model.layers[1].type: required";
    QTest::newRow("negative units") << "/model/layers/1/units" << "-3" << "model.layers[1].units: must be a positive integer, got -3";
    QTest::newRow("zero units") << "/model/layers/0/units" << "0" << "model.layers[0].units: must be a positive integer, got 0";
    QTest::newRow("missing units") << "/model/layers/0/units" << "<delete>" << "model.layers[0].units: required";
    QTest::newRow("negative epochs") << "/training/epochs" << "-1" << "training.epochs: must be a positive integer, got -1";
    QTest::newRow("negative batch") << "/training/batch_size" << "-32" << "training.batch_size: must be a positive integer, got -32";
    QTest::newRow("negative lr") << "/training/optimizer/learning_rate" << "-0.1" << "training.optimizer.learning_rate: must be a positive number";
    QTest::newRow("momentum 1") << "/training/optimizer/momentum" << "1.0" << "training.optimizer.momentum: must be a number in [0, 1)";
    QTest::newRow("negative synthetic") << "/dataset/synthetic_examples" << "-5" << "dataset.synthetic_examples: must be a positive integer, got -5";
    QTest::newRow("one class") << "/dataset/synthetic_classes" << "1" << "dataset.synthetic_classes: must be an integer >= 2";
    QTest::newRow("validation split") << "/dataset/validation_split" << "0.99" << "dataset.validation_split: must be a number in [0, 0.95]";
    QTest::newRow("dropout rate") << "/model/layers/0" << R"({"type": "dropout", "rate": 1.5})" << "model.layers[0].rate: must be a number in [0";
    QTest::newRow("dropout no rate") << "/model/layers/0" << R"({"type": "dropout"})" << "model.layers[0].rate: required";
    QTest::newRow("unknown kind") << "/dataset/kind" << R"("parquet")" << "dataset.kind: must be one of fashion_mnist, idx, csv, synthetic";
    QTest::newRow("unknown optimizer") << "/training/optimizer/type" << R"("rmsprop")" << "training.optimizer.type: must be one of adam, sgd";
    QTest::newRow("unknown strategy") << "/strategy/name" << R"("warp_drive")" << "strategy.name: must be one of";
    QTest::newRow("threads") << "/training/threads" << "-2" << "training.threads: must be an integer in [0, 1024]";
    QTest::newRow("idx without files") << "/dataset" << R"({"kind": "idx"})" << "dataset.train_images: an idx dataset needs";
    QTest::newRow("csv without file") << "/dataset" << R"({"kind": "csv"})" << "dataset.train_csv: a csv dataset needs train_csv";
    // Schedules and callbacks.
    QTest::newRow("schedule type") << "/training/lr_schedule" << R"({"type": "linear"})" << "training.lr_schedule.type: must be one of constant, step, exponential, cosine";
    QTest::newRow("schedule factor") << "/training/lr_schedule" << R"({"type": "step", "factor": 2})" << "training.lr_schedule.factor: must be a number in (0, 1]";
    QTest::newRow("schedule warmup") << "/training/lr_schedule" << R"({"type": "cosine", "warmup_epochs": -1})" << "training.lr_schedule.warmup_epochs: must be a number of epochs >= 0";
    QTest::newRow("schedule field") << "/training/lr_schedule" << R"({"type": "cosine", "alpha": 0.1})" << "training.lr_schedule.alpha: unknown field";
    QTest::newRow("early monitor") << "/training/early_stopping" << R"({"enabled": true, "monitor": "val_acc"})" << "training.early_stopping.monitor: must be one of loss, accuracy, val_loss, val_accuracy";
    QTest::newRow("early patience") << "/training/early_stopping" << R"({"enabled": true, "patience": 0})" << "training.early_stopping.patience: must be a positive integer";
    QTest::newRow("plateau factor") << "/training/reduce_lr_on_plateau" << R"({"enabled": true, "factor": 1})" << "training.reduce_lr_on_plateau.factor: must be a number in (0, 1)";
    QTest::newRow("plateau type") << "/training/reduce_lr_on_plateau/patience" << R"("3")" << R"(training.reduce_lr_on_plateau.patience: must be an integer, got "3")";
    // Unknown fields, at every level.
    QTest::newRow("unknown root field") << "/colour" << R"("blue")" << "colour: unknown field";
    QTest::newRow("unknown training field") << "/training/epoch" << "3" << "training.epoch: unknown field";
    QTest::newRow("unknown optimizer field") << "/training/optimizer/lr" << "0.1" << "training.optimizer.lr: unknown field";
    QTest::newRow("unknown dataset field") << "/dataset/file" << R"("x")" << "dataset.file: unknown field";
    QTest::newRow("unknown layer field") << "/model/layers/0/unit" << "3" << "model.layers[0].unit: unknown field for a dense layer";
    QTest::newRow("unknown strategy field") << "/strategy/replicas" << "2" << "strategy.replicas: unknown field";
    // Missing sections, version and format.
    QTest::newRow("no dataset") << "/dataset" << "<delete>" << "dataset: required";
    QTest::newRow("no model") << "/model" << "<delete>" << "model: required";
    QTest::newRow("no layers") << "/model/layers" << "<delete>" << "model.layers: required";
    QTest::newRow("no training") << "/training" << "<delete>" << "training: required";
    QTest::newRow("newer version") << "/version" << "2" << "version: this project was written by a newer Strata";
    QTest::newRow("version zero") << "/version" << "0" << "version: must be a positive integer";
    QTest::newRow("version string") << "/version" << R"("1")" << "version: must be an integer";
    QTest::newRow("no format") << "/format" << "<delete>" << "format: must be \"strata-project\"";
    QTest::newRow("other format") << "/format" << R"("keras-model")" << "format: must be \"strata-project\"";
  }
  void problems() {
    QFETCH(QString, pointer);
    QFETCH(QString, value);
    QFETCH(QString, expected);
    json j = valid_project();
    const json::json_pointer ptr(pointer.toStdString());
    if (value == "<delete>") j[ptr.parent_pointer()].erase(ptr.back());
    else j[ptr] = json::parse(value.toStdString());

    auto problems = validate_project(j);
    QVERIFY2(contains_problem(problems, expected.toStdString()),
             qPrintable("expected '" + expected + "' among: " + join(problems)));
    // Every problem reads "path: reason".
    for (auto& p : problems) QVERIFY2(p.find(": ") != std::string::npos, p.c_str());
    STRATA_EXPECT_ERROR(project_from_json(j), ErrorKind::BadInput, expected.toStdString());

    // Through a file, the message starts with the file's path.
    const std::string file = path("problem.strata");
    write_text(file, j.dump(2));
    STRATA_EXPECT_ERROR(load_project(file), ErrorKind::BadInput, file, expected.toStdString());
  }

  void newer_version_refused_whole() {
    // A newer file is refused before any field is read: no unknown-field
    // noise from fields this version does not know.
    json j = valid_project();
    j["version"] = 7;
    j["training"]["gradient_clipping"] = 1.0;
    j["model"]["layers"][0] = {{"type", "conv2d"}, {"filters", 8}};
    auto problems = validate_project(j);
    QCOMPARE(problems.size(), size_t(1));
    QVERIFY(problems[0].find("newer Strata") != std::string::npos);
    QVERIFY(problems[0].find("7") != std::string::npos);
  }

  void all_problems_reported_at_once() {
    json j = valid_project();
    j["training"]["epochs"] = "ten";
    j["training"]["batch_size"] = -4;
    j["model"]["layers"][1]["units"] = -3;
    j["model"]["layers"].push_back({{"type", "conv9d"}});
    j["dataset"]["kind"] = "parquet";
    j["strategy"]["devices"] = {"cpu:x"};
    j["extra"] = true;
    const std::vector<std::string> expected{
        "training.epochs: must be an integer",
        "training.batch_size: must be a positive integer, got -4",
        "model.layers[1].units: must be a positive integer, got -3",
        "model.layers[2].type: unknown layer 'conv9d'",
        "dataset.kind: must be one of",
        "strategy.devices[0]: device 'cpu:x'",
        "extra: unknown field",
    };
    auto problems = validate_project(j);
    for (auto& e : expected) QVERIFY2(contains_problem(problems, e), qPrintable(QString::fromStdString(e) + " not in " + join(problems)));
    QCOMPARE(problems.size(), expected.size());
    // One exception carries them all, one per line.
    try {
      project_from_json(j);
      QFAIL("no error");
    } catch (const Error& e) {
      QCOMPARE(e.kind(), ErrorKind::BadInput);
      const std::string msg = e.what();
      for (auto& x : expected) QVERIFY2(msg.find(x) != std::string::npos, msg.c_str());
      QCOMPARE(static_cast<size_t>(std::count(msg.begin(), msg.end(), '\n')) + 1, expected.size());
    }
  }

  void integer_out_of_range() {
    // 2^32 + 1 does not fit the int field; it must be a problem, not wrap to 1.
    json j = valid_project();
    j["training"]["epochs"] = 4294967297LL;
    QVERIFY(contains_problem(validate_project(j), "training.epochs"));
  }

  void not_json() {
    const std::string file = path("broken.strata");
    write_text(file, "{\"format\": \"strata-project\", \"version\": 1,,}");
    STRATA_EXPECT_ERROR(load_project(file), ErrorKind::BadInput, file, "not valid JSON");
    write_text(file, "");
    STRATA_EXPECT_ERROR(load_project(file), ErrorKind::BadInput, file, "not valid JSON");
    write_text(file, "[1, 2, 3]");
    STRATA_EXPECT_ERROR(load_project(file), ErrorKind::BadInput, file, "must be a JSON object");
    STRATA_EXPECT_ERROR(load_project(path("missing.strata")), ErrorKind::BadInput, path("missing.strata"), "cannot open");
  }

  void round_trip_lossless_data() {
    QTest::addColumn<QString>("source");
    QTest::newRow("tiny-synthetic") << QString(STRATA_SOURCE_DIR "/resources/examples/tiny-synthetic.strata");
    QTest::newRow("fashion-mlp") << QString(STRATA_SOURCE_DIR "/resources/examples/fashion-mlp.strata");
    QTest::newRow("valid_project") << QString();
    QTest::newRow("csv, every field") << QString("csv");
    QTest::newRow("idx, relative paths") << QString("idx");
  }
  void round_trip_lossless() {
    QFETCH(QString, source);
    std::string first = source.toStdString();
    if (source.isEmpty() || source == "csv" || source == "idx") {
      json j = valid_project();
      if (source == "csv") {
        j["dataset"] = {{"kind", "csv"}, {"train_csv", "data/train.csv"}, {"test_csv", "/abs/test.csv"}, {"label_column", 0},
                        {"header", "yes"}, {"validation_split", 0.25}, {"standardize", true}};
        j["training"] = {{"epochs", 7}, {"batch_size", 3}, {"optimizer", {{"type", "adam"}, {"learning_rate", 0.003}, {"beta_1", 0.8}, {"beta_2", 0.99}, {"epsilon", 1e-6}}},
                         {"loss", "sparse_categorical_crossentropy"}, {"from_logits", false}, {"seed", 123456789012}, {"shuffle", false},
                         {"drop_remainder", true}, {"threads", 3}, {"prefetch", 0}, {"max_steps_per_epoch", 9},
                         {"checkpoint", {{"every_steps", 100}, {"every_epoch", false}, {"keep", 5}, {"keep_best", false}}},
                         {"lr_schedule", {{"type", "cosine"}, {"warmup_epochs", 0.5}, {"min_lr", 1e-5}}},
                         {"early_stopping", {{"enabled", true}, {"monitor", "val_accuracy"}, {"patience", 4}, {"min_delta", 0.001}}},
                         {"reduce_lr_on_plateau", {{"enabled", true}, {"monitor", "loss"}, {"factor", 0.2}, {"patience", 2},
                                                   {"min_delta", 0.01}, {"cooldown", 1}, {"min_lr", 1e-6}}}};
        j["model"]["layers"] = json::parse(R"([{"type": "flatten"}, {"type": "dense", "units": 5, "activation": "tanh", "use_bias": false},
                                              {"type": "dropout", "rate": 0.3}, {"type": "sigmoid"}, {"type": "dense", "units": 2}, {"type": "softmax"}])");
        j["strategy"] = {{"name", "mirrored"}, {"devices", {"cpu:0", "cpu:1"}}, {"cross_device_ops", "ring"}, {"fusion_bytes", 1024}};
      } else if (source == "idx") {
        j["dataset"] = {{"kind", "idx"}, {"train_images", "imgs/train-images.gz"}, {"train_labels", "imgs/train-labels.gz"},
                        {"test_images", "t-images"}, {"test_labels", "t-labels"}};
      }
      first = path("rt-source.strata");
      write_text(first, j.dump(2));
    }
    RunConfig a = load_project(first);
    const std::string saved = path("rt-saved.strata");
    save_project(a, saved);
    RunConfig b = load_project(saved);
    const json ja = project_to_json(a), jb = project_to_json(b);
    QVERIFY2(ja == jb, qPrintable(QString::fromStdString(ja.dump() + "\n  vs\n" + jb.dump())));
    // And the saved file is itself what project_to_json says, and validates.
    QCOMPARE(json::parse(read_text(saved)), ja);
    // Floats are saved as the decimals they were written as (no 0.0010000000474974513).
    const std::string text = read_text(saved);
    QVERIFY2(text.find("00000000") == std::string::npos && text.find("99999999") == std::string::npos,
             text.c_str());
    QVERIFY(validate_project(ja).empty());
    // Paths stay as written (relative to the project), not resolved.
    if (source == "idx") QCOMPARE(QString::fromStdString(b.dataset.train_images), QString("imgs/train-images.gz"));
    if (source == "csv") {
      QCOMPARE(b.dataset.label_column, 0);
      QCOMPARE(QString::fromStdString(b.dataset.header), QString("yes"));
      QCOMPARE(b.training.seed, uint64_t{123456789012});
      QCOMPARE(b.training.optimizer.beta_1, 0.8f);
      QCOMPARE(b.strategy.devices.size(), size_t(2));
      QCOMPARE(b.layers.size(), size_t(6));
      QCOMPARE(QString::fromStdString(b.training.lr_schedule.type), QString("cosine"));
      QCOMPARE(b.training.lr_schedule.min_lr, 1e-5);
      QCOMPARE(b.training.early_stopping.patience, 4);
      QCOMPARE(QString::fromStdString(b.training.reduce_lr_on_plateau.monitor), QString("loss"));
      QCOMPARE(b.training.reduce_lr_on_plateau.cooldown, 1);
      QCOMPARE(b.training.checkpoint.every_steps, int64_t{100});
      QCOMPARE(b.training.checkpoint.keep_best, false);
    }
    QCOMPARE(QString::fromStdString(b.base_dir), tmp_.path());
    QVERIFY(leftover_temp_files(tmp_.path().toStdString()).empty());
  }

  void save_replaces_existing_file() {
    const std::string file = path("replace.strata");
    write_text(file, "old contents");
    RunConfig c = project_from_json(valid_project());
    c.name = "replaced";
    save_project(c, file);
    QCOMPARE(QString::fromStdString(load_project(file).name), QString("replaced"));
    QVERIFY(leftover_temp_files(tmp_.path().toStdString()).empty());
  }

  void save_is_atomic_unwritable_directory() {
    RunConfig c = project_from_json(valid_project());
    // A folder nobody can create files in (root included).
    const std::string target = "/proc/strata-test-project.strata";
    STRATA_EXPECT_ERROR(save_project(c, target), ErrorKind::BadInput, target);
    // A "directory" that is a regular file.
    const std::string blocker = path("blocker");
    write_text(blocker, "x");
    STRATA_EXPECT_ERROR(save_project(c, blocker + "/p.strata"), ErrorKind::BadInput, blocker + "/p.strata");

    // A read-only folder holding an existing project: the save fails and the
    // file is unchanged (permission bits do not stop root, so skip that part there).
    if (::geteuid() != 0) {
      const std::string dir = path("readonly");
      fs::create_directories(dir);
      const std::string file = dir + "/existing.strata";
      write_text(file, "precious");
      fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
      STRATA_EXPECT_ERROR(save_project(c, file), ErrorKind::BadInput, file);
      fs::permissions(dir, fs::perms::owner_all);
      QCOMPARE(QString::fromStdString(read_text(file)), QString("precious"));
      QVERIFY(leftover_temp_files(dir).empty());
    }
  }

  void save_is_atomic_write_fails_midway() {
    // The write itself fails after part of the file (file size limit, which
    // binds root too): the old file must be untouched and no temp file left.
    const std::string dir = path("fsize");
    fs::create_directories(dir);
    const std::string file = dir + "/existing.strata";
    const std::string old = std::string(300, 'o');
    write_text(file, old);
    RunConfig c = project_from_json(valid_project());
    c.name = std::string(4000, 'n');  // well over the limit below

    struct rlimit saved {};
    QCOMPARE(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    auto* previous = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = saved;
    small.rlim_cur = 1024;
    QCOMPARE(::setrlimit(RLIMIT_FSIZE, &small), 0);
    bool threw = false;
    std::string what;
    ErrorKind kind = ErrorKind::Runtime;
    try {
      save_project(c, file);
    } catch (const Error& e) {
      threw = true;
      what = e.what();
      kind = e.kind();
    }
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, previous);
    QVERIFY2(threw, "saving past the file size limit must fail");
    QCOMPARE(kind, ErrorKind::BadInput);
    QVERIFY2(what.find(file) != std::string::npos && what.find("unchanged") != std::string::npos, what.c_str());
    QCOMPARE(read_text(file), old);
    QVERIFY(leftover_temp_files(dir).empty());
  }

  // ---- run folders --------------------------------------------------------------

  void run_directory_writes_files() {
    RunConfig c = project_from_json(valid_project());
    const std::string dir = path("runs/nested/run-1");
    {
      RunDirectory rd(dir, c);
      QCOMPARE(QString::fromStdString(rd.path()), QString::fromStdString(dir));
      QVERIFY(fs::exists(dir + "/config.json"));
      QCOMPARE(json::parse(read_text(dir + "/config.json")), project_to_json(c));
      RunStartedEvent s;
      s.project = "test";
      s.strategy = "one_device";
      s.replicas = 1;
      rd.emit(s);
      StepEvent st;
      st.step = 1;
      st.epoch = 1;
      st.epoch_step = 1;
      st.loss = 1.25;
      rd.emit(st);
      EpochEvent ep;
      ep.epoch = 1;
      ep.loss = 1.0;
      ep.accuracy = 0.5;
      ep.val_accuracy = 0.625;
      ep.val_loss = 0.9;
      rd.emit(ep);
      FinishedEvent f;
      f.status = RunStatus::Completed;
      f.message = "completed 1 epoch";
      f.steps = 1;
      f.epochs_completed = 1;
      rd.emit(f);
    }
    std::ifstream in(dir + "/events.jsonl");
    std::vector<std::string> types;
    for (std::string line; std::getline(in, line);) types.push_back(event_type(event_from_jsonl(line)));
    QCOMPARE(types, (std::vector<std::string>{"run_started", "step", "epoch", "finished"}));
    json m = json::parse(read_text(dir + "/metrics.json"));
    QCOMPARE(m["status"].get<std::string>(), std::string("completed"));
    QCOMPARE(m["steps"].get<int>(), 1);
    QCOMPARE(m["epochs_completed"].get<int>(), 1);
    QCOMPARE(m["strategy"].get<std::string>(), std::string("one_device"));
    QCOMPARE(m["final_epoch"]["val_accuracy"].get<double>(), 0.625);
    QVERIFY(leftover_temp_files(dir).empty());
  }

  // Steps and their step_spans (one of each per step when traced) stay in
  // the stream's buffer for up to a second; anything else writes them out.
  void run_directory_flushes_per_step_events_now_and_then() {
    RunConfig c = project_from_json(valid_project());
    const std::string dir = path("runs/flush");
    RunDirectory rd(dir, c);
    rd.emit(RunStartedEvent{});
    const auto written = fs::file_size(dir + "/events.jsonl");
    QVERIFY(written > 0);
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 1; i <= 3; ++i) {
      StepEvent st;
      st.step = i;
      rd.emit(st);
      StepSpansEvent sp;
      sp.step = i;
      sp.lanes = {"replica 0"};
      sp.step_ms = {0.25};
      rd.emit(sp);
    }
    // Written out only if a second passed (a very slow machine), as the rule says.
    if (fs::file_size(dir + "/events.jsonl") != written)
      QVERIFY(std::chrono::steady_clock::now() - t0 >= std::chrono::seconds(1));
    rd.emit(LogEvent{"info", "a message", 0.5});
    std::ifstream in(dir + "/events.jsonl");
    std::vector<std::string> types;
    for (std::string line; std::getline(in, line);) types.push_back(event_type(event_from_jsonl(line)));
    QCOMPARE(types, (std::vector<std::string>{"run_started", "step", "step_spans", "step", "step_spans", "step", "step_spans",
                                              "log"}));
  }

  // The writers' rule: anything but a step's events at once; a step's events
  // once the period has passed, its step_spans with its step event.
  void step_flush_policy() {
    const StepEvent step;
    const StepSpansEvent spans;
    StepFlushPolicy never(std::chrono::hours(1));
    QVERIFY(!never.due(step));
    QVERIFY(!never.due(spans));
    QVERIFY(never.due(LogEvent{}));
    QVERIFY(never.due(EpochEvent{}));
    QVERIFY(!never.due(spans));  // after a log event, not a flushed step
    StepFlushPolicy always(std::chrono::seconds(0));
    QVERIFY(always.due(step));
    QVERIFY(always.due(spans));

    const auto period = std::chrono::milliseconds(20);
    StepFlushPolicy every(period);
    std::this_thread::sleep_for(period * 2);
    QVERIFY(every.due(step));  // the period has passed
    const auto flushed = std::chrono::steady_clock::now();
    QVERIFY(every.due(spans));  // the step's breakdown goes with it
    const bool next_step_due = every.due(step);
    // Not due again within the period (a machine too slow to ask in time proves nothing).
    if (std::chrono::steady_clock::now() - flushed < period) QVERIFY(!next_step_due);
  }

  void run_directory_unwritable() {
    RunConfig c = project_from_json(valid_project());
    const std::string blocker = path("run-blocker");
    write_text(blocker, "x");
    STRATA_EXPECT_ERROR(RunDirectory(blocker + "/run", c), ErrorKind::BadInput, blocker + "/run");
    STRATA_EXPECT_ERROR(RunDirectory("/proc/strata-test-run", c), ErrorKind::BadInput, "/proc/strata-test-run");
  }

  // run.json: a person's name, notes and tags for a run; tags cleaned; a
  // damaged file named with the field; writing replaces it whole.
  void run_notes() {
    const std::string dir = path("notes-run");
    fs::create_directories(dir);
    QVERIFY(read_run_notes(dir).name.empty());  // none yet
    write_run_notes(dir, RunNotes{"  baseline ", "first try\nwith \"quotes\"", {" a", "b", "", "a"}});
    const RunNotes n = read_run_notes(dir);
    QCOMPARE(n.name, std::string("baseline"));
    QCOMPARE(n.notes, std::string("first try\nwith \"quotes\""));
    QCOMPARE(n.tags, (std::vector<std::string>{"a", "b"}));
    QCOMPARE(parse_tags(" x, y ,,x "), (std::vector<std::string>{"x", "y"}));
    QVERIFY(leftover_temp_files(dir).empty());
    write_text(dir + "/run.json", R"({"name": 3})");
    STRATA_EXPECT_ERROR(read_run_notes(dir), ErrorKind::BadInput, dir + "/run.json", "field 'name' must be a string");
    write_text(dir + "/run.json", R"({"tags": ["a", 1]})");
    STRATA_EXPECT_ERROR(read_run_notes(dir), ErrorKind::BadInput, "field 'tags' must be an array of strings");
    write_text(dir + "/run.json", "{not json");
    STRATA_EXPECT_ERROR(read_run_notes(dir), ErrorKind::BadInput, dir + "/run.json", "not valid JSON");
    STRATA_EXPECT_ERROR(write_run_notes("/proc/strata-no-such-run", RunNotes{}), ErrorKind::BadInput, "/proc/strata-no-such-run");
  }

  void run_directory_default_location() {
    const std::string project = path("my-project.strata");
    const std::string dir = RunDirectory::default_for(project);
    QVERIFY2(dir.rfind(path("my-project.runs/"), 0) == 0, dir.c_str());
    // A second run in the same second gets its own folder.
    fs::create_directories(dir);
    const std::string second = RunDirectory::default_for(project);
    QVERIFY(second != dir);
  }

  // ---- events -------------------------------------------------------------------

  void event_round_trip() {
    RunStartedEvent rs;
    rs.project = "p";
    rs.strategy = "mirrored";
    rs.devices = {"cpu:0", "cpu:1"};
    rs.replicas = 2;
    rs.global_batch = 64;
    rs.per_replica_batch = {32, 32};
    rs.steps_per_epoch = 10;
    rs.epochs = 3;
    rs.dataset = "synthetic";
    rs.train_examples = 640;
    rs.validation_examples = 160;
    rs.params = 1234;
    rs.cross_device_ops = "ring";
    rs.threads_per_replica = 2;
    auto rs2 = std::get<RunStartedEvent>(event_from_jsonl(event_to_jsonl(rs)));
    QCOMPARE(rs2.devices, rs.devices);
    QCOMPARE(rs2.per_replica_batch, rs.per_replica_batch);
    QCOMPARE(rs2.params, rs.params);
    QCOMPARE(rs2.validation_examples, rs.validation_examples);
    QCOMPARE(rs2.cross_device_ops, rs.cross_device_ops);
    QCOMPARE(rs2.threads_per_replica, 2);
    QCOMPARE(rs2.replicas, 2);
    QCOMPARE(rs2.epochs, 3);

    StepEvent st;
    st.step = 17;
    st.epoch = 2;
    st.epoch_step = 7;
    st.time = 1.5;
    st.replica_losses = {0.5, std::nan(""), INFINITY};
    st.loss = std::nan("");
    st.lr = 1e30;
    st.samples_per_sec = 1000.25;
    // Every number of every list goes through the same writer and reader,
    // so a time the step could not measure survives as well as a loss.
    st.worker_step_times = {0.25, std::nan("")};
    const std::string line = event_to_jsonl(st);
    QVERIFY2(line.find('\n') == std::string::npos, line.c_str());
    QVERIFY(json::parse(line)["type"] == "step");
    QVERIFY(json::parse(line)["loss"] == "nan");  // JSON has no NaN: written as a string
    auto st2 = std::get<StepEvent>(event_from_jsonl(line));
    QCOMPARE(st2.step, int64_t{17});
    QCOMPARE(st2.epoch, 2);
    QCOMPARE(st2.epoch_step, int64_t{7});
    QVERIFY(std::isnan(st2.loss));
    QCOMPARE(st2.replica_losses.size(), size_t(3));
    QCOMPARE(st2.replica_losses[0], 0.5);
    QVERIFY(std::isnan(st2.replica_losses[1]));
    QVERIFY(std::isinf(st2.replica_losses[2]) && st2.replica_losses[2] > 0);
    QCOMPARE(st2.lr, 1e30);
    QCOMPARE(st2.time, 1.5);
    QCOMPARE(st2.samples_per_sec, 1000.25);
    QCOMPARE(st2.worker_step_times.size(), size_t(2));
    QCOMPARE(st2.worker_step_times[0], 0.25);
    QVERIFY(std::isnan(st2.worker_step_times[1]));

    EpochEvent ep;
    ep.epoch = 4;
    ep.loss = -INFINITY;
    ep.accuracy = 0.75;
    ep.time = 9;
    ep.samples_per_sec = 3;
    auto ep2 = std::get<EpochEvent>(event_from_jsonl(event_to_jsonl(ep)));
    QVERIFY(std::isinf(ep2.loss) && ep2.loss < 0);
    QVERIFY(!ep2.val_loss && !ep2.val_accuracy);
    QCOMPARE(ep2.accuracy, 0.75);
    ep.val_loss = std::nan("");
    ep.val_accuracy = 0.5;
    auto ep3 = std::get<EpochEvent>(event_from_jsonl(event_to_jsonl(ep)));
    QVERIFY(ep3.val_loss && std::isnan(*ep3.val_loss));
    QCOMPARE(*ep3.val_accuracy, 0.5);
    QCOMPARE(ep3.lr, 0.0);
    QVERIFY(!ep3.best);
    ep.lr = 0.00025;
    ep.best = true;
    auto ep4 = std::get<EpochEvent>(event_from_jsonl(event_to_jsonl(ep)));
    QCOMPARE(ep4.lr, 0.00025);
    QVERIFY(ep4.best);

    DeviceStatsEvent ds;
    ds.time = 2;
    ds.devices = {DeviceStat{"cpu:0", 0.5, int64_t{1} << 33, int64_t{1} << 34}, DeviceStat{"cpu:1", std::nullopt, std::nullopt, std::nullopt}};
    auto ds2 = std::get<DeviceStatsEvent>(event_from_jsonl(event_to_jsonl(ds)));
    QCOMPARE(ds2.devices.size(), size_t(2));
    QCOMPARE(ds2.devices[0].device, std::string("cpu:0"));
    QCOMPARE(*ds2.devices[0].utilization, 0.5);
    QCOMPARE(*ds2.devices[0].memory_used, int64_t{1} << 33);
    QCOMPARE(*ds2.devices[0].memory_total, int64_t{1} << 34);
    QVERIFY(!ds2.devices[1].utilization && !ds2.devices[1].memory_used && !ds2.devices[1].memory_total);

    StepSpansEvent sp;
    sp.step = 7;
    sp.time = 1.5;
    sp.lanes = {"replica 0", "replica 1", "run"};
    sp.step_ms = {2.1, 2.25, 0};
    sp.kinds = {"forward", "collective_wait"};
    sp.kind_ms = {{0.75, 0.8, 0}, {0.5, 0.001, 0}};
    sp.slowest = "replica 1";
    sp.comm_ms = 0.25;
    auto sp2 = std::get<StepSpansEvent>(event_from_jsonl(event_to_jsonl(sp)));
    QCOMPARE(sp2.step, int64_t{7});
    QCOMPARE(sp2.lanes, sp.lanes);
    QCOMPARE(sp2.step_ms, sp.step_ms);
    QCOMPARE(sp2.kinds, sp.kinds);
    QCOMPARE(sp2.kind_ms, sp.kind_ms);
    QCOMPARE(sp2.slowest, sp.slowest);
    QCOMPARE(sp2.comm_ms, 0.25);
    QCOMPARE(std::string(event_type(sp)), std::string("step_spans"));

    LogEvent lg{"warning", "line one\nline \"two\" \xc3\xa9", 3.25};
    auto lg2 = std::get<LogEvent>(event_from_jsonl(event_to_jsonl(lg)));
    QCOMPARE(lg2.level, lg.level);
    QCOMPARE(lg2.message, lg.message);
    QCOMPARE(lg2.time, 3.25);
    QVERIFY(event_to_jsonl(lg).find('\n') == std::string::npos);

    CheckpointEvent ck{"/tmp/ckpt-5", 500, 5, 12.5};
    auto ck2 = std::get<CheckpointEvent>(event_from_jsonl(event_to_jsonl(ck)));
    QCOMPARE(ck2.path, ck.path);
    QCOMPARE(ck2.step, int64_t{500});
    QCOMPARE(ck2.epoch, 5);
    QCOMPARE(ck2.time, 12.5);

    FinishedEvent fe;
    fe.status = RunStatus::Failed;
    fe.message = "loss became NaN at step 3";
    fe.time = 0.5;
    fe.steps = 3;
    fe.epochs_completed = 0;
    auto fe2 = std::get<FinishedEvent>(event_from_jsonl(event_to_jsonl(fe)));
    QCOMPARE(fe2.status, fe.status);
    QCOMPARE(fe2.message, fe.message);
    QCOMPARE(fe2.steps, int64_t{3});
    QCOMPARE(fe2.epochs_completed, 0);
    QCOMPARE(fe2.time, 0.5);
    QVERIFY(!fe2.stopped_early);
    QVERIFY(event_to_jsonl(fe).find("stopped_early") == std::string::npos);  // only when it did
    // The failure kind is written with a failed status and read back;
    // streams from before it existed get it from their message.
    fe.failure = FailureKind::ServerFailed;
    QVERIFY(event_to_jsonl(fe).find("\"failure\":\"server_failed\"") != std::string::npos);
    QVERIFY(std::get<FinishedEvent>(event_from_jsonl(event_to_jsonl(fe))).failure == FailureKind::ServerFailed);
    const auto old_nan = std::get<FinishedEvent>(
        event_from_jsonl(R"({"type":"finished","status":"failed","message":"loss became NaN at step 3","time":1,"steps":3})"));
    QVERIFY(old_nan.failure == FailureKind::Diverged);
    const auto old_other = std::get<FinishedEvent>(event_from_jsonl(R"({"type":"finished","status":"failed","message":"x"})"));
    QVERIFY(old_other.failure == FailureKind::Internal);
    STRATA_EXPECT_ERROR(event_from_jsonl(R"({"type":"finished","status":"done"})"), ErrorKind::BadInput,
                        "status must be completed, stopped or failed, got 'done'");
    STRATA_EXPECT_ERROR(event_from_jsonl(R"({"type":"finished","status":"failed","failure":"meteor"})"), ErrorKind::BadInput,
                        "unknown failure kind 'meteor'");
    fe.status = RunStatus::Completed;
    fe.failure = FailureKind::None;
    QVERIFY(event_to_jsonl(fe).find("failure") == std::string::npos);  // only for a failed run
    fe.stopped_early = true;
    QVERIFY(std::get<FinishedEvent>(event_from_jsonl(event_to_jsonl(fe))).stopped_early);
  }

  void event_type_names() {
    QCOMPARE(QString(event_type(RunStartedEvent{})), QString("run_started"));
    QCOMPARE(QString(event_type(StepEvent{})), QString("step"));
    QCOMPARE(QString(event_type(EpochEvent{})), QString("epoch"));
    QCOMPARE(QString(event_type(DeviceStatsEvent{})), QString("device_stats"));
    QCOMPARE(QString(event_type(LogEvent{})), QString("log"));
    QCOMPARE(QString(event_type(CheckpointEvent{})), QString("checkpoint"));
    QCOMPARE(QString(event_type(FinishedEvent{})), QString("finished"));
    // Field names of docs/events.md.
    json j = event_to_json(StepEvent{});
    for (const char* k : {"type", "step", "epoch", "epoch_step", "time", "replica_losses", "loss", "lr", "samples_per_sec"})
      QVERIFY2(j.contains(k), k);
  }

  void malformed_events() {
    STRATA_EXPECT_ERROR(event_from_jsonl("not json"), ErrorKind::BadInput, "not JSON");
    STRATA_EXPECT_ERROR(event_from_jsonl("{}"), ErrorKind::BadInput, "type");
    STRATA_EXPECT_ERROR(event_from_jsonl(R"({"type": "teleport"})"), ErrorKind::BadInput, "unknown type 'teleport'");
    // Integer fields take whole numbers their type holds; anything else is
    // bad input, never an out-of-range conversion (a fuzzer's finding).
    STRATA_EXPECT_ERROR(event_from_jsonl(R"({"type": "step", "step": 2.99739e19})"), ErrorKind::BadInput, "'step'");
    STRATA_EXPECT_ERROR(event_from_jsonl(R"({"type": "step", "step": 1.5})"), ErrorKind::BadInput, "'step'");
    STRATA_EXPECT_ERROR(event_from_jsonl(R"({"type": "run_started", "replicas": 4294967296})"), ErrorKind::BadInput,
                        "'replicas'");
    STRATA_EXPECT_ERROR(event_from_jsonl(R"({"type": "step", "worker_steps": [1, -1e300]})"), ErrorKind::BadInput,
                        "'worker_steps'");
    QCOMPARE(std::get<StepEvent>(event_from_jsonl(R"({"type": "step", "step": 3.0})")).step, int64_t{3});
    STRATA_EXPECT_ERROR(event_from_jsonl(R"({"type": "step", "loss": "lots"})"), ErrorKind::BadInput, "loss");
    STRATA_EXPECT_ERROR(event_from_jsonl(R"({"type": "step", "step": "one"})"), ErrorKind::BadInput, "step");
  }
};

QTEST_GUILESS_MAIN(TestProject)
#include "test_project.moc"
