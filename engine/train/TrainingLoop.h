#pragma once
// The bookkeeping every strategy's training loop shares, which the Trainer
// does and a parameter-server run (ParameterServerRun) calls back into:
// step and epoch events, the learning rate, checkpoints, pause and stop.
#include <cstdint>
#include <string>

#include "train/Checkpoint.h"
#include "train/Events.h"

namespace strata {

// One epoch's running figures for throughput and the stop decision.
struct EpochProgress {
  double start = 0;
  int64_t samples = 0;  // this session's, for throughput
  bool stopping = false;
};

class TrainingLoop {
public:
  virtual ~TrainingLoop() = default;
  // Advances pos by one step, completes and emits ev; false (and fin
  // failed) when the loss diverged.
  virtual bool record_step(StepEvent& ev, TrainingPosition& pos, int64_t batch, int64_t correct, EpochProgress& ep,
                           FinishedEvent& fin) = 0;
  // The epoch's summary: validation, the epoch-end callbacks, the epoch
  // event, the epoch checkpoint. False when the run stops early here.
  virtual bool finish_epoch(TrainingPosition& pos, const EpochProgress& ep, FinishedEvent& fin) = 0;
  // Sets the optimizer's rate for the step with 0-based index `step`.
  virtual void set_step_learning_rate(int64_t step) = 0;
  virtual void save_checkpoint(const TrainingPosition& pos) = 0;
  // Makes the configured straggler replica take `slowdown` times as long.
  virtual void straggle(int replica, double step_seconds) const = 0;
  virtual void wait_while_paused() = 0;
  virtual bool stop_requested() const = 0;
  // Training seconds so far (paused time excluded).
  virtual double elapsed() const = 0;
  virtual void log(const std::string& level, const std::string& message) = 0;
  // The step timeline up to step `completed` collected (a worker rank that
  // emits no step events of its own).
  virtual void flush_trace(int64_t completed) = 0;
};

// The position at the start of the epoch after pos's.
TrainingPosition next_epoch(const TrainingPosition& pos);
// "stopped by request after step 40 (epoch 3)", or "after epoch 2 (step
// 32)" when the stop came between epochs.
std::string stop_message(const TrainingPosition& pos);

}  // namespace strata
