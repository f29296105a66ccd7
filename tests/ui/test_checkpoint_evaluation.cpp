// The dashboard's checkpoint evaluation (Qt-free part): a run trained with
// its replicas on the simulated accelerator is evaluated on the host - test
// loss, accuracy, confusion matrix and sample predictions - and gives what
// the same run on the cpu gives, also while another run trains on that
// accelerator, capturing its step as a graph.
#include <QtTest>

#include <QTemporaryDir>

#include <atomic>
#include <thread>

#include "CheckpointEvaluation.h"
#include "engine/RecordingSink.h"
#include "project/ProjectFile.h"

using namespace strata;

class TestCheckpointEvaluation : public QObject {
  Q_OBJECT

  // Trains the tiny project on `devices` in run folder `run` and evaluates its newest checkpoint.
  static ui::CheckpointEvaluation train_and_evaluate(const std::string& devices, const std::string& run) {
    RunConfig c = load_project(STRATA_SOURCE_DIR "/resources/examples/tiny-synthetic.strata");
    c.strategy.name = "mirrored";
    c.strategy.devices.clear();
    for (auto& d : Device::parse_list(devices)) c.strategy.devices.push_back(d.str());
    RecordingSink sink;
    Trainer trainer(c, sink);
    trainer.enable_checkpoints(run + "/checkpoints");
    const FinishedEvent fin = trainer.run();
    if (fin.status != RunStatus::Completed) throw std::runtime_error(fin.message);
    const auto checkpoints = ui::list_checkpoints(run);
    if (checkpoints.empty()) throw std::runtime_error("no checkpoint in " + run);
    return ui::evaluate_checkpoint(c, checkpoints.front().dir, 16);
  }

private slots:
  void evaluates_on_sim_devices_as_on_cpu() {
    QTemporaryDir tmp;
    const auto cpu = train_and_evaluate("cpu:0,cpu:1", tmp.path().toStdString() + "/cpu");
    const auto sim = train_and_evaluate("sim:0,sim:1", tmp.path().toStdString() + "/sim");
    QCOMPARE(sim.device, std::string("cpu:0"));
    QVERIFY(sim.evaluation.examples > 0);
    QCOMPARE(sim.evaluation.examples, cpu.evaluation.examples);
    QCOMPARE(sim.evaluation.accuracy, cpu.evaluation.accuracy);
    QVERIFY(std::abs(sim.evaluation.loss - cpu.evaluation.loss) <= 1e-6 * std::max(1.0, cpu.evaluation.loss));
    QCOMPARE(sim.evaluation.confusion, cpu.evaluation.confusion);
    QCOMPARE(sim.samples.size(), size_t{16});
    for (size_t i = 0; i < sim.samples.size(); ++i) QCOMPARE(sim.samples[i].predicted, cpu.samples[i].predicted);
  }

  void evaluates_beside_a_run_capturing_its_step_on_the_same_device() {
    // Evaluating on the run's accelerator put the evaluation's allocations,
    // copies and kernels inside the other run's capture: the training run
    // failed ("allocations made during the capture are still in use") or the
    // evaluation did ("a copy from the host cannot be part of a captured
    // step"), a few times in a hundred. Each short run below captures at its
    // second step while the evaluations go on.
    QTemporaryDir tmp;
    const std::string run = tmp.path().toStdString() + "/sim";
    train_and_evaluate("sim:0", run);
    const std::string checkpoint = ui::list_checkpoints(run).front().dir;
    RunConfig c = load_project(STRATA_SOURCE_DIR "/resources/examples/tiny-synthetic.strata");
    c.strategy.devices = {"sim:0"};
    c.training.epochs = 1;
    std::atomic<bool> done{false};
    std::atomic<int> evaluations{0};
    std::string evaluation_error;
    std::thread evaluator([&] {
      while (!done.load() && evaluation_error.empty()) {
        try {
          ui::evaluate_checkpoint(c, checkpoint, 4);
        } catch (const std::exception& e) {
          evaluation_error = e.what();
        }
        ++evaluations;
      }
    });
    std::string training_error;
    for (int i = 0; i < 30 && training_error.empty(); ++i) {
      RecordingSink sink;
      Trainer trainer(c, sink);
      const FinishedEvent fin = trainer.run();
      if (fin.status != RunStatus::Completed) training_error = fin.message;
    }
    done = true;
    evaluator.join();
    QVERIFY2(training_error.empty(), training_error.c_str());
    QVERIFY2(evaluation_error.empty(), evaluation_error.c_str());
    QVERIFY(evaluations.load() > 0);
  }
};

QTEST_GUILESS_MAIN(TestCheckpointEvaluation)
#include "test_checkpoint_evaluation.moc"
