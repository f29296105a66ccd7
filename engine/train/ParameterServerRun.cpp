#include "train/ParameterServerRun.h"

#include <algorithm>
#include <limits>

#include "core/Clock.h"
#include "core/Error.h"
#include "distribute/parameter_server/WorkerRoundSpans.h"
#include "nn/GradientTape.h"
#include "nn/Metrics.h"
#include "train/LearningRateSchedule.h"
#include "train/StepReadback.h"

namespace strata {

ParameterServerRun::ParameterServerRun(ParameterServerStrategy& strategy, const RunConfig& config, nn::Sequential& model,
                                       nn::Loss& loss, nn::Optimizer& optimizer, std::vector<Variable*> trainable,
                                       TrainingLoop& loop)
    : ps_(strategy),
      config_(config),
      model_(model),
      loss_(loss),
      optimizer_(optimizer),
      trainable_(std::move(trainable)),
      loop_(loop) {
  ps_.place(trainable_, optimizer_);
  const size_t w = static_cast<size_t>(ps_.num_workers());
  worker_loss_acc_.assign(w, {0.0, 0});
  worker_last_loss_.assign(w, 0.0);
  worker_last_seconds_.assign(w, 0.0);
  worker_steps_.assign(w, 0);
  lost_workers_.assign(w, false);
  if (config_.strategy.fail_server >= 0)
    ps_.store().fail_at(config_.strategy.fail_server, std::max<int64_t>(1, config_.strategy.fail_server_update));
  if (ps_.multi_process()) {
    const TrainingConfig& t = config_.training;
    // Only the chief learns the epochs' figures and the rounds' progress, so
    // only it can move the rate, which it can do for the shards it serves.
    if (ps_.num_servers() > 1 && (!is_constant(t.lr_schedule) || t.reduce_lr_on_plateau.enabled))
      throw bad_input(
          "training.lr_schedule / reduce_lr_on_plateau: a parameter-server run across processes moves the "
          "learning rate only with one server (strategy.servers is " +
          std::to_string(ps_.num_servers()) + ")");
    // MPI counts are int: a shard's packed state (its weights and each
    // optimizer slot, the biggest message) must fit one, or the messages
    // would go out with a wrapped count. Every rank sees the same layout, so
    // all refuse alike, before any message.
    const int64_t per_element = 1 + static_cast<int64_t>(optimizer_.slot_names().size());
    for (int s = 0; s < ps_.num_servers(); ++s)
      if (ps_.store().shard_elements(s) * per_element > std::numeric_limits<int>::max())
        throw bad_input("strategy.servers: parameter server " + std::to_string(s) + "'s shard holds " +
                        std::to_string(ps_.store().shard_elements(s)) + " values (" + std::to_string(per_element) +
                        " with the optimizer's state), more than one MPI message carries (" +
                        std::to_string(std::numeric_limits<int>::max()) +
                        "); use more servers (strategy.servers) or smaller pieces (strategy.min_shard_bytes)");
    // Worker ranks talk to the server ranks; the failure of a worker rank is
    // a real process death (see work_remotely).
    if (!ps_.is_server()) {
      RemoteServerOptions o = remote_options();
      // Fault injection: a real process death mid-push, which the servers must notice.
      if (ps_.worker_index() == config_.strategy.fail_worker)
        o.die_in_push = std::max<int64_t>(1, config_.strategy.fail_worker_step);
      remote_ = connect_parameter_servers(ps_.cluster(), ps_.store(), o);
    }
    return;
  }
  coordinator_ = std::make_unique<ClusterCoordinator>(ps_, [this](int worker, const Batch& in) {
    return worker_step(worker, in);
  });
  if (config_.strategy.fail_worker >= 0)
    coordinator_->fail_worker_at(config_.strategy.fail_worker, std::max<int64_t>(1, config_.strategy.fail_worker_step));
}

ParameterServerRun::~ParameterServerRun() = default;

DistributedDataset ParameterServerRun::distribute(std::shared_ptr<BatchPipeline> pipeline) const {
  return DistributedDataset(std::move(pipeline), ps_.num_workers(), std::max(0, ps_.worker_index()), 1, ps_.devices());
}

void ParameterServerRun::describe(RunStartedEvent& started) const {
  started.cross_device_ops = "parameter_server";
  started.servers = ps_.num_servers();
  started.staleness_bound = ps_.staleness_bound();
  started.shards = ps_.store().plan().describe(trainable_);
}

void ParameterServerRun::restore(const TrainingPosition& start) {
  start_ = start;
  ps_.store().copy_from_model();
  ps_.store().set_updates(optimizer_.iterations());
}

RemoteServerOptions ParameterServerRun::remote_options() const {
  RemoteServerOptions o;
  o.servers = ps_.num_servers();
  o.bound = ps_.staleness_bound();
  o.timeout = config_.strategy.collective_timeout;
  o.first_round = start_.step + 1;
  o.first_epoch = start_.epoch_complete ? start_.epoch + 1 : start_.epoch;
  return o;
}

WorkerStep ParameterServerRun::worker_step(int worker, const Batch& in) {
  const double t0 = monotonic_seconds();
  GradientTape tape;
  Tensor logits = model_(in.features, true, tape);
  // The mean over the worker's own slice: asynchronously every slice is a
  // step of its own (synchronous rounds weight the slices by size).
  Tensor loss = loss_.average(in.labels, logits, Tensor::scalar(nn::inverse_global_batch(in.size()), logits.device()));
  WorkerStep out;
  out.grads = tape.gradient(loss, trainable_);
  const StepReadback back = read_step(loss, logits, in.labels);
  out.loss = back.loss;
  out.correct = back.correct;
  loop_.straggle(worker, monotonic_seconds() - t0);
  return out;
}

void ParameterServerRun::trace(trace::TraceRecorder* recorder) {
  tracer_ = recorder;
  if (coordinator_) coordinator_->trace(recorder);
  // The servers' updates: in this process's store (in-process servers, or this rank's shard as a server rank).
  ps_.store().trace(recorder);
}

void ParameterServerRun::sync_model() {
  ps_.store().copy_to_model();
  optimizer_.set_iterations(ps_.store().updates());
  // Non-trainable state (batch-norm moving statistics) is each worker's own;
  // evaluation and checkpoints use worker 0's everywhere.
  for (auto* v : model_.variables())
    for (int c = 1; c < v->num_components(); ++c) v->component(c).copy_from(v->component(0));
}

void ParameterServerRun::tally_slice(const PushRecord& r) {
  RoundTally& round = rounds_[r.round];
  round.done++;
  round.loss_sum += r.loss * static_cast<double>(r.examples);
  round.examples += r.examples;
  round.correct += r.correct;
  round.staleness = std::max(round.staleness, r.staleness);
  if (r.examples > 0) {
    auto& acc = worker_loss_acc_[static_cast<size_t>(r.worker)];
    acc.first += r.loss;
    acc.second++;
  }
  worker_last_seconds_[static_cast<size_t>(r.worker)] = r.seconds;
  worker_steps_[static_cast<size_t>(r.worker)]++;
}

void ParameterServerRun::report_lost_worker(int worker, const std::string& reason, const std::string& what_next) {
  lost_workers_[static_cast<size_t>(worker)] = true;
  const auto alive = std::count(lost_workers_.begin(), lost_workers_.end(), false);
  const std::string where = ps_.multi_process() ? "rank " + std::to_string(worker + ps_.num_servers())
                                                : ps_.devices()[static_cast<size_t>(worker)].str();
  loop_.log("warning", "worker " + std::to_string(worker) + " (" + where + ") lost: " + reason + "; training continues on " +
                           std::to_string(alive) + " worker" + (alive == 1 ? "" : "s") + what_next);
}

std::vector<double> ParameterServerRun::server_update_rates() {
  // Across processes the chief knows only its own server's count.
  const double now = monotonic_seconds();
  if (last_server_stats_.empty()) {
    last_server_stats_ = ps_.store().stats();
    if (ps_.multi_process()) last_server_stats_.resize(1);
    last_server_stats_time_ = now;
    server_update_rates_.assign(last_server_stats_.size(), 0.0);
  } else if (now - last_server_stats_time_ >= 0.05) {
    auto stats = ps_.store().stats();
    stats.resize(last_server_stats_.size());
    for (size_t s = 0; s < stats.size(); ++s)
      server_update_rates_[s] = static_cast<double>(stats[s].updates - last_server_stats_[s].updates) /
                                (now - last_server_stats_time_);
    last_server_stats_ = stats;
    last_server_stats_time_ = now;
  }
  return server_update_rates_;
}

bool ParameterServerRun::emit_rounds(TrainingPosition& pos, EpochProgress& ep, FinishedEvent& fin) {
  const size_t W = worker_steps_.size();
  const int live = static_cast<int>(std::count(lost_workers_.begin(), lost_workers_.end(), false));
  // In one process a round's slices are known when it is scheduled; across
  // processes a round is complete when every live worker has pushed it.
  auto complete = [&](const RoundTally& r) { return r.expected > 0 ? r.done >= r.expected : r.done >= live; };
  while (!rounds_.empty() && rounds_.begin()->first == pos.step + 1 && complete(rounds_.begin()->second)) {
    const RoundTally round = rounds_.begin()->second;
    rounds_.erase(rounds_.begin());
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
    ev.worker_steps = worker_steps_;
    for (size_t w = 0; w < W; ++w)
      if (lost_workers_[w]) ev.lost_workers.push_back(static_cast<int>(w));
    ev.server_updates_per_sec = server_update_rates();
    if (!loop_.record_step(ev, pos, round.examples, round.correct, ep, fin)) return false;
  }
  return true;
}

void ParameterServerRun::run_epoch(TrainingPosition& pos, int64_t steps_per_epoch, DistributedDataset& dist,
                                   EpochProgress& ep, FinishedEvent& fin) {
  ClusterCoordinator& coord = *coordinator_;
  // Folds finished slices in and emits every complete round in order;
  // false when the loss diverged.
  auto report = [&]() -> bool {
    for (auto& r : coord.take_results()) tally_slice(r);
    for (auto& l : coord.take_lost()) report_lost_worker(l.worker, l.reason, ", its slice is redone by another");
    return emit_rounds(pos, ep, fin);
  };

  const CheckpointConfig& ck = config_.training.checkpoint;
  int64_t next_round = pos.step + 1;
  int64_t scheduled = pos.epoch_step;
  try {
    coord.start();
    while (scheduled < steps_per_epoch) {
      loop_.wait_while_paused();  // the workers finish what is queued meanwhile
      if (loop_.stop_requested()) {
        ep.stopping = true;
        break;
      }
      auto inputs = dist.next();
      if (!inputs) break;
      int nonempty = 0;
      for (auto& s : *inputs) nonempty += s.size() > 0;
      rounds_[next_round].expected = nonempty;
      // Workers apply slices as they come: each at the rate current then.
      loop_.set_step_learning_rate(next_round - 1);
      coord.schedule(next_round++, *inputs);
      ++scheduled;
      if (!report()) break;
      if (ck.every_steps > 0 && (next_round - 1) % ck.every_steps == 0 && scheduled < steps_per_epoch) {
        // A checkpoint is a consistent cut: every scheduled round applied.
        coord.join();
        if (!report()) break;
        pos.elapsed = loop_.elapsed();
        loop_.save_checkpoint(pos);
        coord.start();
      }
    }
    coord.join();
    if (fin.status != RunStatus::Failed) report();
  } catch (...) {
    try {
      coord.join();
    } catch (...) {
    }
    throw;
  }
  sync_model();
}

void ParameterServerRun::run_processes(TrainingPosition& pos, int64_t steps_per_epoch, DistributedDataset& dist,
                                       FinishedEvent& fin) {
  if (ps_.is_server()) serve_as_chief(pos, steps_per_epoch, fin);
  else work_remotely(pos, steps_per_epoch, dist, fin);
}

namespace {
// Forwards the chief server's reports to the run's functions.
struct ChiefObserver final : ServerObserver {
  std::function<void(const PushRecord&)> on_push;
  std::function<void(int, const std::string&)> on_lost;
  std::function<bool(int)> on_epoch;
  std::function<bool()> on_poll;
  void pushed(const PushRecord& push) override { on_push(push); }
  void worker_lost(int w, const std::string& why) override { on_lost(w, why); }
  bool epoch_finished(int epoch) override { return on_epoch(epoch); }
  bool stop_requested() override { return on_poll(); }
};
}  // namespace

// Every server rank serves its shard; rank 0 (the chief) also turns the
// pushes into step events and evaluates and checkpoints at each epoch's end.
void ParameterServerRun::serve_as_chief(TrainingPosition& pos, int64_t steps_per_epoch, FinishedEvent& fin) {
  const bool chief = ps_.cluster().rank() == 0;
  EpochProgress ep;
  ep.start = loop_.elapsed();
  ChiefObserver observer;
  observer.on_push = [&](const PushRecord& push) {
    tally_slice(push);
    emit_rounds(pos, ep, fin);
    // The chief applies the updates (one server): the next ones at the
    // rate of the round after the newest pushed.
    loop_.set_step_learning_rate(std::max(pos.step, push.round));
  };
  observer.on_lost = [&](int w, const std::string& why) {
    report_lost_worker(w, why, "; its slices are skipped from now on");
    emit_rounds(pos, ep, fin);
  };
  observer.on_poll = [&] { return loop_.stop_requested(); };
  observer.on_epoch = [&](int epoch) {
    emit_rounds(pos, ep, fin);
    if (fin.status == RunStatus::Failed) return false;
    if (loop_.stop_requested() && pos.epoch_step < steps_per_epoch) {
      // Stopped mid-epoch at the round the chief chose: a consistent cut.
      fin.status = RunStatus::Stopped;
      fin.message = stop_message(pos);
      sync_model();
      pos.elapsed = loop_.elapsed();
      loop_.save_checkpoint(pos);
      return false;
    }
    if (pos.epoch_step < steps_per_epoch)
      throw runtime_error("epoch " + std::to_string(epoch) + " ended after " + std::to_string(pos.epoch_step) + " of " +
                          std::to_string(steps_per_epoch) + " steps");
    sync_model();
    if (!loop_.finish_epoch(pos, ep, fin)) return false;  // stopped early: the workers stop too
    if (loop_.stop_requested()) {
      fin.status = RunStatus::Stopped;
      fin.message = "stopped by request after epoch " + std::to_string(epoch);
      return false;
    }
    if (epoch >= config_.training.epochs) return true;
    pos = next_epoch(pos);
    ep = EpochProgress{loop_.elapsed(), 0, false};
    return true;
  };
  serve_parameters(ps_.cluster(), ps_.store(), remote_options(), chief ? &observer : nullptr);
}

// A worker rank trains its slice of every global batch: pull, compute, push.
void ParameterServerRun::work_remotely(TrainingPosition& pos, int64_t steps_per_epoch, DistributedDataset& dist,
                                       FinishedEvent& fin) {
  const int w = ps_.worker_index();
  const bool sync = ps_.synchronous();
  for (; pos.epoch <= config_.training.epochs; pos = next_epoch(pos)) {
    dist.begin_epoch(pos.epoch - 1, pos.epoch_step);  // mid-epoch after a resume
    while (pos.epoch_step < steps_per_epoch && !remote_->stopping()) {
      auto inputs = dist.next();
      if (!inputs) break;
      const Batch& slice = (*inputs)[0];
      const int64_t round = pos.step + 1;
      ps_.run_replicas([&](ReplicaContext&) {
        const double t0 = monotonic_seconds();
        const std::vector<int64_t> pulled = remote_->pull(0, round);
        const double pulled_at = monotonic_seconds();
        if (remote_->stopping()) return;  // the chief's cut is before this round
        WorkerStep out = slice.size() ? worker_step(w, slice) : WorkerStep{};
        PushRecord m;
        m.round = round;
        m.worker = w;
        m.examples = slice.size();
        m.round_examples = slice.global_batch_size;
        m.weight = sync ? static_cast<float>(m.examples) / static_cast<float>(std::max<int64_t>(1, m.round_examples)) : 1.0f;
        m.sync_slices = sync ? 1 : 0;  // the servers count the live workers
        m.correct = out.correct;
        m.loss = out.loss;
        m.staleness = remote_->last_staleness();
        m.seconds = monotonic_seconds() - t0;
        const double push_start = monotonic_seconds();
        remote_->push(out.grads, pulled, m);
        // Across processes the pull includes the wait for the staleness bound.
        record_worker_round(tracer_, w, round, out.grads, t0, pulled_at, push_start, monotonic_seconds());
      });
      loop_.flush_trace(round);
      if (remote_->stopping()) break;
      ++pos.step;
      ++pos.epoch_step;
    }
    fin.epochs_completed = pos.epoch;
    if (!remote_->finish_epoch(pos.epoch)) {
      fin.status = RunStatus::Stopped;
      fin.message = "the chief server ended training after epoch " + std::to_string(pos.epoch);
      break;
    }
  }
  remote_->finish();
}

}  // namespace strata
