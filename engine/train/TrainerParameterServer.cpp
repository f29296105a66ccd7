// The Trainer's ParameterServerStrategy half: the coordinator hands slices of
// each global batch to whichever worker is free, and step events are emitted
// as rounds (global batches) become fully applied, in round order.
#include <algorithm>
#include <map>

#include "core/Clock.h"
#include "core/Error.h"
#include "distribute/ParameterServerStrategy.h"
#include "nn/GradientTape.h"
#include "nn/Metrics.h"
#include "train/Trainer.h"

namespace strata {

void Trainer::prepare_parameter_server() {
  ps_ = dynamic_cast<ParameterServerStrategy*>(strategy_.get());
  if (!ps_) {
    if (config_.strategy.fail_worker >= 0 || config_.strategy.fail_server >= 0)
      throw bad_input("fail_worker/fail_server: only parameter_server workers and servers can be failed on purpose (the strategy is " +
                      strategy_->name() + ")");
    return;
  }
  ps_->place(trainable_, *optimizer_);
  coordinator_ = std::make_unique<ClusterCoordinator>(*ps_, [this](int worker, const Batch& in) {
    const double t0 = monotonic_seconds();
    GradientTape tape;
    Tensor logits = (*model_)(in.features, true, tape);
    Tensor per_example = (*loss_)(in.labels, logits);
    // The mean over the worker's own slice: asynchronously every slice is a
    // step of its own (the coordinator weights them in synchronous rounds).
    Tensor loss = nn::compute_average_loss(per_example, in.size());
    WorkerStep out;
    out.grads = tape.gradient(loss, trainable_);
    out.loss = loss.item();
    out.correct = nn::count_correct(logits, in.labels);
    straggle(worker, monotonic_seconds() - t0);
    return out;
  });
  if (config_.strategy.fail_server >= 0)
    ps_->store().fail_at(config_.strategy.fail_server, std::max<int64_t>(1, config_.strategy.fail_server_update));
  if (config_.strategy.fail_worker >= 0)
    coordinator_->fail_worker_at(config_.strategy.fail_worker, std::max<int64_t>(1, config_.strategy.fail_worker_step));
  const size_t w = static_cast<size_t>(ps_->num_workers());
  worker_loss_acc_.assign(w, {0.0, 0});
  worker_last_loss_.assign(w, 0.0);
  worker_last_seconds_.assign(w, 0.0);
}

void Trainer::sync_model_from_servers() {
  if (!ps_) return;
  ps_->store().copy_to_model();
  optimizer_->set_iterations(ps_->store().updates());
  // Non-trainable state (batch-norm moving statistics) is each worker's own;
  // evaluation and checkpoints use worker 0's everywhere.
  for (auto* v : model_->variables())
    for (int c = 1; c < v->num_components(); ++c) v->component(c).copy_from(v->component(0));
}

void Trainer::run_epoch_async(TrainingPosition& pos, int64_t steps_per_epoch, DistributedDataset& dist, EpochProgress& ep,
                              FinishedEvent& fin) {
  struct Round {
    int expected = 0, done = 0;
    double loss_sum = 0;
    int64_t examples = 0, correct = 0;
    int staleness = 0;
  };
  std::map<int64_t, Round> rounds;  // scheduled, not yet reported
  ClusterCoordinator& coord = *coordinator_;
  const size_t W = static_cast<size_t>(ps_->num_workers());
  if (last_server_stats_.empty()) {
    last_server_stats_ = ps_->store().stats();
    last_server_stats_time_ = monotonic_seconds();
  }
  std::vector<double> update_rates(last_server_stats_.size(), 0.0);

  // Folds finished slices in and emits every complete round in order;
  // false when the loss diverged.
  auto report = [&]() -> bool {
    for (auto& r : coord.take_results()) {
      Round& round = rounds[r.round];
      round.done++;
      round.loss_sum += r.loss * static_cast<double>(r.examples);
      round.examples += r.examples;
      round.correct += r.correct;
      round.staleness = std::max(round.staleness, r.staleness);
      auto& acc = worker_loss_acc_[static_cast<size_t>(r.worker)];
      acc.first += r.loss;
      acc.second++;
      worker_last_seconds_[static_cast<size_t>(r.worker)] = r.seconds;
    }
    for (auto& l : coord.take_lost()) {
      const auto lost = coord.lost();
      const auto alive = std::count(lost.begin(), lost.end(), false);
      sink_.emit(LogEvent{"warning", "worker " + std::to_string(l.worker) + " (" + ps_->devices()[static_cast<size_t>(l.worker)].str() +
                                         ") lost: " + l.reason + "; training continues on " + std::to_string(alive) +
                                         " worker" + (alive == 1 ? "" : "s") + ", its slice is redone by another",
                          elapsed()});
    }
    while (!rounds.empty() && rounds.begin()->first == pos.step + 1 && rounds.begin()->second.done == rounds.begin()->second.expected) {
      const Round round = rounds.begin()->second;
      rounds.erase(rounds.begin());
      StepEvent ev;
      ev.loss = round.examples ? round.loss_sum / static_cast<double>(round.examples) : 0.0;
      for (size_t w = 0; w < W; ++w) {
        auto& acc = worker_loss_acc_[w];
        if (acc.second) worker_last_loss_[w] = acc.first / static_cast<double>(acc.second);
        acc = {0.0, 0};
      }
      ev.replica_losses = worker_last_loss_;
      ev.worker_step_times = worker_last_seconds_;
      ev.staleness = round.staleness;
      ev.worker_steps = coord.worker_steps();
      const auto lost = coord.lost();
      for (size_t w = 0; w < W; ++w)
        if (lost[w]) ev.lost_workers.push_back(static_cast<int>(w));
      // Update rates over at least 50 ms, so they do not jitter from step to step.
      const double now = monotonic_seconds();
      if (now - last_server_stats_time_ >= 0.05) {
        const auto stats = ps_->store().stats();
        for (size_t s = 0; s < stats.size(); ++s)
          update_rates[s] = static_cast<double>(stats[s].updates - last_server_stats_[s].updates) / (now - last_server_stats_time_);
        last_server_stats_ = stats;
        last_server_stats_time_ = now;
      }
      ev.server_updates_per_sec = update_rates;
      if (!record_step(ev, pos, round.examples, round.correct, ep, fin)) return false;
    }
    return true;
  };

  const CheckpointConfig& ck = config_.training.checkpoint;
  int64_t next_round = pos.step + 1;
  int64_t scheduled = pos.epoch_step;
  try {
    coord.start();
    while (scheduled < steps_per_epoch) {
      wait_while_paused();  // the workers finish what is queued meanwhile
      if (stop_) {
        ep.stopping = true;
        break;
      }
      auto inputs = dist.next();
      if (!inputs) break;
      int nonempty = 0;
      for (auto& s : *inputs) nonempty += s.size() > 0;
      rounds[next_round].expected = nonempty;
      coord.schedule(next_round++, *inputs);
      ++scheduled;
      if (!report()) break;
      if (ck.every_steps > 0 && (next_round - 1) % ck.every_steps == 0 && scheduled < steps_per_epoch) {
        // A checkpoint is a consistent cut: every scheduled round applied.
        coord.join();
        if (!report()) break;
        pos.elapsed = elapsed();
        save_checkpoint(pos);
        coord.start();
      }
    }
    coord.join();
    if (fin.status != "failed") report();
  } catch (...) {
    try {
      coord.join();
    } catch (...) {
    }
    throw;
  }
  sync_model_from_servers();
}

}  // namespace strata
