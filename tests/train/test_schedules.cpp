// Learning-rate schedules and the epoch-end callbacks (early stopping,
// reduce-on-plateau, the best checkpoint): Keras' formulas and rules, the
// rate every step really trains with (also in a replayed step graph, on the
// simulated device), and a resumed run that decides exactly as an unbroken one.
#include <QtTest>

#include <QTemporaryDir>

#include <cmath>
#include <numbers>

#include "engine/RecordingSink.h"
#include "train/LearningRateSchedule.h"
#include "train/Trainer.h"
#include "train/TrainingCallbacks.h"

using namespace strata;

namespace {

bool sim() {
  const char* env = std::getenv("STRATA_TEST_DEVICES");
  return env && std::string(env) == "sim";
}

RunConfig config() {
  RunConfig c;
  c.name = "schedules";
  c.dataset.kind = "synthetic";
  c.dataset.synthetic_examples = 500;
  c.dataset.synthetic_features = 10;
  c.dataset.synthetic_classes = 3;
  c.dataset.validation_split = 0.2;
  c.layers = {nlohmann::json{{"type", "dense"}, {"units", 16}, {"activation", "relu"}},
              nlohmann::json{{"type", "dense"}, {"units", 3}}};
  c.training.epochs = 6;
  c.training.batch_size = 32;  // 320 train examples (after the test and validation splits): 10 steps per epoch
  c.training.optimizer.type = "sgd";
  c.training.optimizer.learning_rate = 0.05f;
  c.training.seed = 5;
  c.training.threads = 1;
  c.strategy.devices = {sim() ? "sim:0" : "cpu:0"};
  return c;
}

struct Run {
  std::vector<StepEvent> steps;
  std::vector<EpochEvent> epochs;
  std::vector<LogEvent> logs;
  FinishedEvent finished;
};

class StopAfter final : public EventSink {
public:
  explicit StopAfter(int64_t step) : step_(step) {}
  Trainer* trainer = nullptr;
  RecordingSink record;
  void emit(const Event& e) override {
    record.emit(e);
    if (auto* s = std::get_if<StepEvent>(&e); s && s->step == step_ && trainer) trainer->request_stop();
  }

private:
  int64_t step_;
};

Run train(const RunConfig& c, const std::string& dir = {}, int64_t stop_at = -1, bool resume = false) {
  StopAfter sink(stop_at);
  Trainer t(c, sink);
  sink.trainer = &t;
  t.prepare();
  if (!dir.empty()) t.enable_checkpoints(dir);
  if (resume) t.restore(*CheckpointManager::latest(dir));
  Run r;
  r.finished = t.run();
  r.steps = sink.record.all<StepEvent>();
  r.epochs = sink.record.all<EpochEvent>();
  r.logs = sink.record.all<LogEvent>();
  return r;
}

}  // namespace

class TestSchedules : public QObject {
  Q_OBJECT

private slots:
  // Keras' formulas, written out independently here.
  void schedule_formulas() {
    const double base = 0.1;
    LrScheduleConfig c;
    QCOMPARE(LearningRateSchedule(c, base, 10, 5).at(37), base);
    QVERIFY(LearningRateSchedule(c, base, 10, 5).constant());

    c.type = "step";
    c.every_epochs = 2;
    c.factor = 0.5;
    const LearningRateSchedule step(c, base, 10, 6);
    QCOMPARE(step.at(0), base);
    QCOMPARE(step.at(19), base);        // epochs 1-2
    QCOMPARE(step.at(20), base * 0.5);  // from epoch 3
    QCOMPARE(step.at(45), base * 0.25);

    c.type = "exponential";
    c.decay_rate = 0.9;
    const LearningRateSchedule exp(c, base, 10, 6);
    QVERIFY(std::abs(exp.at(20) - base * 0.81) < 1e-15);
    QVERIFY(std::abs(exp.at(5) - base * std::pow(0.9, 0.5)) < 1e-15);  // smooth, not staircase

    c.type = "cosine";
    c.min_lr = 0.01;
    c.warmup_epochs = 1;
    const LearningRateSchedule cos(c, base, 10, 5);  // 50 steps: 10 warm-up, 40 decay
    QVERIFY(std::abs(cos.at(0) - base / 10) < 1e-15);
    QVERIFY(std::abs(cos.at(4) - base / 2) < 1e-15);
    QVERIFY(std::abs(cos.at(10) - base) < 1e-15);
    QVERIFY(std::abs(cos.at(30) - (0.01 + (base - 0.01) * 0.5 * (1 + std::cos(std::numbers::pi * 0.5)))) < 1e-15);
    QVERIFY(cos.at(49) > 0.01 && cos.at(49) < 0.0102);
    QVERIFY(!cos.constant());
  }

  void schedule_settings_are_checked() {
    LrScheduleConfig c;
    c.type = "linear";
    QCOMPARE(check_lr_schedule(c, 0.1, "training.lr_schedule").front(),
             std::string("training.lr_schedule.type: must be one of constant, step, exponential, cosine, got \"linear\""));
    c.type = "cosine";
    c.min_lr = 0.2;
    QVERIFY(check_lr_schedule(c, 0.1, "x").front().starts_with("x.min_lr: must be >= 0 and below the learning rate"));
    c.type = "step";
    c.factor = 1.5;
    QVERIFY(check_lr_schedule(c, 0.1, "x").front().starts_with("x.factor"));
    TrainingConfig t;
    t.early_stopping.enabled = true;
    t.early_stopping.monitor = "val_acc";
    QVERIFY(check_callbacks(t, true).front().starts_with("training.early_stopping.monitor: must be one of"));
    t.early_stopping.monitor = "val_loss";
    QVERIFY(check_callbacks(t, false).front().find("needs validation data") != std::string::npos);
    QVERIFY(check_callbacks(t, true).empty());
  }

  // Keras' rules: early stopping after `patience` epochs without an
  // improvement larger than min_delta; the plateau's reductions, cooldown
  // and floor.
  void callback_rules() {
    TrainingConfig t;
    t.early_stopping = {true, "val_loss", 2, 0.01};
    t.reduce_lr_on_plateau = {true, "loss", 0.5, 1, 0.0, 2, 0.02};
    TrainingCallbacks cb(t);
    auto epoch = [&](int e, double loss, double val_loss, double lr) {
      return cb.end_epoch(e, EpochFigures{loss, 0.5, val_loss, 0.5}, lr);
    };
    QVERIFY(!epoch(1, 1.0, 1.0, 0.1).stop);
    QVERIFY(!epoch(2, 0.9, 0.995, 0.1).stop);  // val_loss: not better by 0.01; loss improved
    auto d3 = epoch(3, 0.95, 0.98, 0.1);       // val_loss: 0.98 < 1.0 - 0.01, a new best; loss worse: reduce
    QVERIFY(!d3.stop);
    QCOMPARE(d3.notes.size(), size_t{1});
    QCOMPARE(cb.lr_scale(), 0.5);
    auto d4 = epoch(4, 0.95, 0.975, 0.05);  // cooldown (2 epochs, counted as in Keras): no reduction
    QVERIFY(d4.notes.empty() && !d4.stop);
    auto d5 = epoch(5, 0.95, 0.99, 0.05);  // second epoch without a val_loss improvement: stop
    QVERIFY(d5.stop);
    QVERIFY2(d5.stop->find("best 0.98 at epoch 3") != std::string::npos, d5.stop->c_str());
    QCOMPARE(d5.notes.size(), size_t{1});  // and the plateau reduced again
    QCOMPARE(cb.lr_scale(), 0.25);
    QCOMPARE(cb.learning_rate(0.04), 0.02);  // 0.04 * 0.25 = 0.01, held at the floor 0.02

    // The state survives a checkpoint: a restored copy decides alike.
    TrainingCallbacks copy(t);
    copy.restore(cb.state());
    QCOMPARE(copy.state(), cb.state());
    QCOMPARE(copy.lr_scale(), 0.25);
  }

  // Every step trains at the scheduled rate; in a replayed step graph too
  // (test_schedules_sim): the run with graphs equals the one without.
  void steps_train_at_the_scheduled_rate() {
    RunConfig c = config();
    c.training.lr_schedule.type = "cosine";
    c.training.lr_schedule.warmup_epochs = 1;
    c.training.lr_schedule.min_lr = 0.001;
    const Run run = train(c);
    QCOMPARE(run.steps.size(), size_t{60});
    if (sim()) {  // the steps really replayed a captured graph
      bool captured = false;
      for (auto& l : run.logs) captured |= l.message.find("captured as a graph") != std::string::npos;
      QVERIFY(captured);
    }
    const LearningRateSchedule s(c.training.lr_schedule, c.training.optimizer.learning_rate, 10, 6);
    for (const StepEvent& e : run.steps)
      QVERIFY2(std::abs(e.lr - static_cast<float>(s.at(e.step - 1))) <= 1e-6 * e.lr,
               qPrintable(QString("step %1: lr %2, schedule %3").arg(e.step).arg(e.lr).arg(s.at(e.step - 1))));
    QVERIFY2(run.epochs.back().lr == run.steps.back().lr, qPrintable(QString("%1 vs %2").arg(run.epochs.back().lr, 0, 'g', 17).arg(run.steps.back().lr, 0, 'g', 17)));

    RunConfig eager = c;
    eager.training.step_graphs = false;
    const Run e = train(eager);
    for (size_t i = 0; i < run.steps.size(); ++i) QCOMPARE(run.steps[i].loss, e.steps[i].loss);
    RunConfig flat = c;
    flat.training.lr_schedule = {};
    QVERIFY(train(flat).steps.back().loss != run.steps.back().loss);  // the rate had its effect
  }

  // Early stopping ends the run as completed, saying why; the checkpoint
  // of its last epoch is written.
  void early_stopping_ends_the_run() {
    RunConfig c = config();
    c.training.epochs = 30;
    c.training.early_stopping = {true, "val_loss", 2, 0.05};  // demands large gains: stops soon
    QTemporaryDir tmp;
    const Run r = train(c, tmp.path().toStdString());
    QCOMPARE(std::string(status_name(r.finished.status)), std::string("completed"));
    QVERIFY2(r.finished.message.starts_with("stopped early after epoch "), r.finished.message.c_str());
    QVERIFY(r.finished.epochs_completed < 30);
    QCOMPARE(static_cast<int>(r.epochs.size()), r.finished.epochs_completed);
    const auto ckpt = CheckpointManager::read_info(*CheckpointManager::latest(tmp.path().toStdString()));
    QCOMPARE(ckpt.position.epoch, r.finished.epochs_completed);
    QCOMPARE(ckpt.val_epoch, r.finished.epochs_completed);
  }

  // Stopped mid-run and resumed: the same rates, losses, reductions and
  // early stop as the unbroken run.
  void resumed_run_decides_alike() {
    RunConfig c = config();
    c.training.epochs = 30;
    c.training.lr_schedule.type = "exponential";
    c.training.lr_schedule.decay_rate = 0.95;
    c.training.reduce_lr_on_plateau = {true, "val_loss", 0.5, 1, 0.01, 0, 0.0};
    c.training.early_stopping = {true, "val_loss", 3, 0.01};
    QTemporaryDir tmp;
    const Run whole = train(c, tmp.path().toStdString() + "/whole");
    QVERIFY(whole.finished.message.starts_with("stopped early"));
    int reductions = 0;
    for (auto& l : whole.logs) reductions += l.message.starts_with("reduce_lr_on_plateau");
    QVERIFY(reductions >= 1);

    const std::string dir = tmp.path().toStdString() + "/split";
    // Stop mid-epoch, after the first reduction.
    int64_t stop_at = 0;
    for (auto& e : whole.epochs)
      if (e.lr < whole.epochs.front().lr * 0.95 * 0.75 && !stop_at) stop_at = e.epoch * 10 + 3;
    QVERIFY(stop_at > 0 && stop_at < static_cast<int64_t>(whole.steps.size()));
    const Run first = train(c, dir, stop_at);
    QCOMPARE(std::string(status_name(first.finished.status)), std::string("stopped"));
    // The mid-epoch checkpoint's validation figures are the last finished epoch's, and it says so.
    const auto mid = CheckpointManager::read_info(*CheckpointManager::latest(dir));
    QCOMPARE(mid.position.epoch, static_cast<int>(stop_at / 10) + 1);
    QCOMPARE(mid.val_epoch, mid.position.epoch - 1);
    const Run rest = train(c, dir, -1, true);
    QCOMPARE(rest.finished.message, whole.finished.message);
    QCOMPARE(first.steps.size() + rest.steps.size(), whole.steps.size());
    for (size_t i = 0; i < rest.steps.size(); ++i) {
      const StepEvent& a = whole.steps[first.steps.size() + i];
      QCOMPARE(rest.steps[i].step, a.step);
      QCOMPARE(rest.steps[i].lr, a.lr);
      QVERIFY2(std::abs(rest.steps[i].loss - a.loss) <= 1e-6 * std::max(1.0, std::abs(a.loss)),
               qPrintable(QString("step %1: %2 vs %3").arg(a.step).arg(rest.steps[i].loss).arg(a.loss)));
    }
  }
};

QTEST_GUILESS_MAIN(TestSchedules)
#include "test_schedules.moc"
