#include "train/Trainer.h"

#include "core/ShortestDecimal.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <thread>

#include "core/Clock.h"
#include "core/Error.h"
#include "core/Rng.h"
#include "distribute/Strategies.h"
#include "nn/GradientTape.h"
#include "nn/Metrics.h"
#include "trace/DevicePhases.h"
#include "train/ModelFactory.h"
#include "train/ParameterServerRun.h"
#include "train/StepReadback.h"

namespace strata {

Trainer::Trainer(RunConfig config, EventSink& sink) : config_(std::move(config)), sink_(sink) {}
Trainer::~Trainer() {
  // The step graph first: a graph that captured NCCL collectives keeps their
  // communicators from being destroyed (ncclCommDestroy waits for it), and
  // the strategy, which owns them, is otherwise destroyed before it.
  step_graph_.reset();
  // Then the step still in flight (a run that failed while one was queued):
  // its queue waits for it, so its graph's timing marks have been recorded
  // before device_spans_, declared after the queue and so destroyed first,
  // hands their events back to the device for another run to take.
  stats_queue_.reset();
  try {
    if (strategy_) allow_branches(false);
  } catch (...) {
    // A device that could not be opened had no branches to stop.
  }
}

void Trainer::allow_branches(bool allowed) {
  // A device one replica of this process uses computes its weight gradients
  // on a side branch of its work (Backend::begin_branch): the device has one
  // branch, so replicas sharing a device run in order.
  if (!allowed) {
    for (const Device& d : branched_devices_) backend_for(d).allow_branches(false);
    branched_devices_.clear();
    return;
  }
  std::map<std::string, int> replicas_on;
  for (const Device& d : strategy_->devices()) ++replicas_on[d.str()];
  for (const Device& d : strategy_->devices())
    if (d.kind != DeviceKind::Cpu && replicas_on[d.str()] == 1) {
      backend_for(d).allow_branches(true);
      branched_devices_.push_back(d);
    }
}

void Trainer::prepare() {
  const TrainingConfig& t = config_.training;
  if (t.epochs <= 0) throw bad_input("training.epochs: must be a positive integer, got " + std::to_string(t.epochs));
  if (t.batch_size <= 0) throw bad_input("training.batch_size: must be a positive integer, got " + std::to_string(t.batch_size));

  StrategyOptions so;
  for (auto& d : config_.strategy.devices) so.devices.push_back(Device::parse(d));
  so.threads = t.threads;
  so.cross_device_ops = config_.strategy.cross_device_ops;
  so.fusion_bytes = static_cast<size_t>(config_.strategy.fusion_bytes);
  so.sharded_update = config_.strategy.sharded_update;
  so.collective_timeout = config_.strategy.collective_timeout;
  so.parameter_server.servers = config_.strategy.servers;
  if (config_.strategy.staleness >= 0) so.parameter_server.staleness = config_.strategy.staleness;
  so.parameter_server.min_shard_bytes = config_.strategy.min_shard_bytes;
  strategy_ = make_strategy(config_.strategy.name, so);
  if (t.gradient_branches) allow_branches(true);
  if (config_.strategy.straggler >= strategy_->num_replicas_in_sync())
    throw bad_input("straggler: replica " + std::to_string(config_.strategy.straggler) + " does not exist (" +
                    std::to_string(strategy_->num_replicas_in_sync()) + " replicas)");
  if (config_.strategy.fail_replica >= strategy_->num_replicas_in_sync())
    throw bad_input("fail_replica: replica " + std::to_string(config_.strategy.fail_replica) + " does not exist (" +
                    std::to_string(strategy_->num_replicas_in_sync()) + " replicas)");
  if (config_.strategy.fail_replica >= 0 && config_.strategy.fail_replica_step < 1)
    throw bad_input("fail_replica_step: the step replica " + std::to_string(config_.strategy.fail_replica) +
                    " fails at counts from 1, got " + std::to_string(config_.strategy.fail_replica_step));
  if (config_.strategy.straggler >= 0 && !(config_.strategy.slowdown >= 1.0))
    throw bad_input("straggler: the slowdown must be at least 1, got " + std::to_string(config_.strategy.slowdown));
  if (t.batch_size < strategy_->num_replicas_in_sync())
    throw bad_input("training.batch_size: global batch " + std::to_string(t.batch_size) + " is smaller than the " +
                    std::to_string(strategy_->num_replicas_in_sync()) + " replicas");

  loss_scales_.assign(static_cast<size_t>(strategy_->num_local_replicas()), LossScale{});
  data_ = load_data(config_.dataset, t.seed, config_.base_dir);
  set_global_seed(t.seed);
  {
    auto scope = strategy_->scope();  // variables created here are mirrored
    model_ = make_model(config_);
    model_->build(data_.train->example_shape());
    optimizer_ = make_optimizer(t.optimizer);
  }
  loss_ = make_loss(t);
  {
    // The schedule and callbacks' settings may come from strata-run's flags
    // as well as the project, so they are checked here, where it is also
    // known whether there is validation data to monitor.
    std::vector<std::string> problems = check_lr_schedule(t.lr_schedule, t.optimizer.learning_rate, "training.lr_schedule");
    for (auto& p : check_callbacks(t, data_.validation && data_.validation->size() > 0)) problems.push_back(p);
    if (!problems.empty()) {
      std::string all = problems.front();
      for (size_t i = 1; i < problems.size(); ++i) all += "; " + problems[i];
      throw bad_input(all);
    }
    callbacks_ = std::make_unique<TrainingCallbacks>(t);
  }
  trainable_ = model_->trainable_variables();
  if (auto* ps = dynamic_cast<ParameterServerStrategy*>(strategy_.get()))
    ps_ = std::make_unique<ParameterServerRun>(*ps, config_, *model_, *loss_, *optimizer_, trainable_,
                                               static_cast<TrainingLoop&>(*this));
  else if (config_.strategy.fail_worker >= 0 || config_.strategy.fail_server >= 0)
    throw bad_input(
        "fail_worker/fail_server: only parameter_server workers and servers can be failed on purpose (the strategy is " +
        strategy_->name() + ")");
  if (ps_ && config_.strategy.fail_replica >= 0)
    throw bad_input("fail_replica: a parameter_server run fails a worker (fail_worker) or a server (fail_server)");
  const auto out = model_->summary(data_.train->example_shape()).back().output_shape;
  if (out.rank() != 1 || out[0] < data_.train->num_classes())
    throw bad_input("model: the last layer gives " + out.str() + " outputs per example but the dataset has " +
                    std::to_string(data_.train->num_classes()) + " classes");
  logit_width_ = out[0];

  PipelineOptions po;
  po.batch_size = t.batch_size;
  po.shuffle = t.shuffle;
  po.seed = t.seed;
  po.drop_remainder = t.drop_remainder;
  po.prefetch = t.prefetch;
  pipeline_ = std::make_shared<BatchPipeline>(data_.train, po);
  prepare_step_execution();
  device_stats_ = std::make_unique<DeviceStatsSampler>(strategy_->devices());
  if (config_.trace.enabled) {
    Cluster& cluster = strategy_->cluster();
    tracer_ = std::make_unique<StepTracer>(
        trace::TraceMetadata{config_.name, cluster.rank(), cluster.host(), clock_offset_to_rank0_us(cluster)}, sink_);
    if (!config_.trace.file.empty()) write_trace_to(rank_trace_file(config_.trace.file, cluster.rank(), cluster.size()));
    if (ps_) ps_->trace(recorder());
  }
  if (pipeline_->steps_per_epoch() == 0)
    throw bad_input("training: " + std::to_string(data_.train->size()) + " training examples give no full batch of " +
                    std::to_string(t.batch_size) + " with drop_remainder");
}

void Trainer::drain_device_spans(int64_t step, int marked_graph) {
  if (trace::TraceRecorder* r = recorder()) device_spans_.drain(*r, marked_graph >= 0 ? step : -1, std::max(marked_graph, 0));
}

void Trainer::flush_trace(int64_t completed) {
  if (tracer_) tracer_->flush(elapsed(), completed);
}

void Trainer::write_trace_to(const std::string& file) {
  if (tracer_) tracer_->open_file(file, config_.trace.max_file_mib << 20);
}

void Trainer::set_span_listener(StepTracer::Listener listener) {
  if (tracer_) tracer_->set_listener(std::move(listener));
}

std::optional<PerReplica<Trainer::StepResult>> Trainer::run_step(const PerReplica<Batch>& inputs, int64_t step,
                                                                 DistributedDataset& dist) {
  traced_step_ = step;
  const bool failing = step == config_.strategy.fail_replica_step && config_.strategy.fail_replica >= 0;
  if (step_graph_ && !failing) {
    // A replay runs no host code: device scalars the eager step rewrites
    // when they change (the loss scale after a partial batch) are set here.
    for (int r = 0; r < inputs.num_replicas(); ++r)
      loss_scale(r, strategy_->devices()[static_cast<size_t>(r)], inputs[r].global_batch_size);
    const int captures = step_graph_->captures();
    const size_t marks = device_spans_.mark();
    if (auto stats = step_graph_->run(inputs, device_marks_)) {
      const int marked = step_graph_->marked_graph();
      if (step_graph_->captures() != captures) {
        if (step_graph_->captured_new_shape())
          sink_.emit(LogEvent{"info",
                              "step " + std::to_string(step) + ": the training step is captured as a graph on " +
                                  strategy_->devices().front().str() +
                                  " and replayed from now on (--no-graphs turns this off)",
                              elapsed()});
        // The device spans opened while capturing are the graph's: each replay times them again.
        if (marked >= 0) device_spans_.keep_for_replays(marks, marked);
      }
      // Read one step late (finish_queued), traced or not: marked steps
      // alternate two graphs, so this step's timing marks stay as they are
      // while the next step runs.
      if (config_.training.read_late) {
        queue_stats(*stats, marked);
        return std::nullopt;
      }
      std::vector<StepResult> out;
      for (int r = 0; r < inputs.num_replicas(); ++r) out.push_back(step_result((*stats)[static_cast<size_t>(r)], inputs[r]));
      drain_device_spans(step, marked);
      return PerReplica<StepResult>(std::move(out));
    }
  }
  if (read_eager_steps_late_) {
    // Op by op on accelerators (replicas on different GPUs): queued like a
    // replay, read one step late. The replicas' host time is only their
    // queueing; the device lanes of the timeline show their compute.
    const PerReplica<Tensor> stats = strategy_->run(
        [this, &dist, failing](ReplicaContext& ctx, const Batch& input) {
          if (failing) fail_on_purpose(ctx);
          const trace::ScopedSpan frame(recorder(), trace::SpanKind::Step, ctx.lane(), traced_step_);
          Batch in;
          return queue_train_step(ctx, input, dist, in);
        },
        inputs);
    queue_stats(std::vector<Tensor>(stats.begin(), stats.end()), -1);
    return std::nullopt;
  }
  return strategy_->run(
      [this, &dist, failing](ReplicaContext& ctx, const Batch& in) {
        if (failing) fail_on_purpose(ctx);
        return train_step(ctx, in, dist);
      },
      inputs);
}

void Trainer::fail_on_purpose(const ReplicaContext& ctx) const {
  const int replica = ctx.replica_id_in_sync_group();
  if (replica != config_.strategy.fail_replica) return;
  throw runtime_error("replica " + std::to_string(replica) + " (" + ctx.device().str() + ") failed (injected at step " +
                      std::to_string(config_.strategy.fail_replica_step) + ")");
}

void Trainer::queue_stats(const std::vector<Tensor>& stats, int graph) {
  if (!stats_queue_) stats_queue_ = std::make_unique<StepStatsQueue>(strategy_->devices());
  stats_queue_->push(stats);
  queued_graph_ = graph;
}

void Trainer::prepare_step_execution() {
  // Synchronous strategies whose replicas keep their own variables (the
  // parameter server and central storage move weights between devices
  // around each step), without the host-timed straggler demonstration.
  const std::string& name = config_.strategy.name;
  const bool own_variables = name == "one_device" || name == "mirrored" || name == "multi_worker_mirrored";
  const auto& devices = strategy_->devices();
  read_eager_steps_late_ = config_.training.read_late && own_variables && config_.strategy.straggler < 0 &&
                           std::none_of(devices.begin(), devices.end(), [](const Device& d) { return d.is_host(); });
  if (!config_.training.step_graphs || name == "multi_worker_mirrored" || !own_variables || config_.strategy.straggler >= 0 ||
      !StepGraph::unsupported_reason(*strategy_).empty())
    return;
  step_graph_ = std::make_unique<StepGraph>(
      *strategy_, [this](ReplicaContext& ctx, const Batch& in, Tensor& stats) { enqueue_step(ctx, in, stats, true); },
      [this] {
        optimizer_->count_replayed_step();
        model_->count_replayed_step();
      });
}

void Trainer::straggle(int replica, double step_seconds) const {
  if (replica != config_.strategy.straggler || config_.strategy.slowdown <= 1.0) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(step_seconds * (config_.strategy.slowdown - 1.0)));
}

void Trainer::enqueue_step(ReplicaContext& ctx, const Batch& in, Tensor& stats, bool captured) {
  const double t0 = monotonic_seconds();
  ctx.trace(recorder(), traced_step_, device_spans());
  using trace::SpanKind;
  const trace::Lane lane = ctx.lane();
  // Each phase twice: as the host queued it and (on an accelerator) as the
  // device ran it; a captured graph's phases share their boundary marks.
  trace::DevicePhases device(device_spans(), ctx.device(), trace::device_lane(ctx.local_replica_id()), traced_step_,
                             captured);
  GradientTape tape;
  Tensor logits, loss;
  {
    const trace::ScopedSpan s(recorder(), SpanKind::Forward, lane, traced_step_);
    device.begin();
    logits = (*model_)(in.features, true, tape);
    loss = loss_->average(in.labels, logits, loss_scale(ctx.local_replica_id(), ctx.device(), in.global_batch_size));
    device.end(SpanKind::Forward);
  }
  // Gradients are reduced across replicas while the backward pass goes on
  // where the strategy's collectives run beside the computation.
  GradientTape::Ready ready;
  if (ctx.overlaps_backward()) ready = [&ctx](size_t i, const Tensor& g) { ctx.gradient_ready(i, g); };
  std::vector<Tensor> grads;
  {
    const trace::ScopedSpan s(recorder(), SpanKind::Backward, lane, traced_step_);
    device.begin();
    grads = tape.gradient(loss, trainable_, ready);
    device.end(SpanKind::Backward);
  }
  straggle(ctx.replica_id_in_sync_group(), monotonic_seconds() - t0);
  ctx.finish_gradients(grads);
  {
    // Under the sharded update it holds the weights' all-gather, a span of its own.
    const trace::ScopedSpan s(recorder(), SpanKind::Optimizer, lane, traced_step_);
    // Several replicas: the gradients' reduction came between (spans of its own).
    device.begin(ctx.num_replicas_in_sync() > 1);
    optimizer_->apply_summed_gradients(ctx, grads, trainable_);
    device.end(SpanKind::Optimizer);
  }
  gather_step(loss, logits, in.labels, stats);
  device.finish();
}

Trainer::StepResult Trainer::train_step(ReplicaContext& ctx, const Batch& input, DistributedDataset& dist) {
  const trace::ScopedSpan frame(recorder(), trace::SpanKind::Step, ctx.lane(), traced_step_);
  const double t0 = monotonic_seconds(), c0 = ctx.collective_seconds();
  Batch in;
  const Tensor stats = queue_train_step(ctx, input, dist, in);
  StepResult r = step_result(stats, in);
  drain_device_spans();
  // The step less the waits for the other replicas: equal-speed replicas
  // show equal times, a slow one a larger time.
  r.figures.compute_seconds = (monotonic_seconds() - t0) - (ctx.collective_seconds() - c0);
  return r;
}

Tensor Trainer::queue_train_step(ReplicaContext& ctx, const Batch& input, DistributedDataset& dist, Batch& in) {
  {
    // Host replicas that gather their own rows (gather_in_replicas): the
    // batch's way to the replica, inside its step.
    trace::ScopedSpan s(input.pending ? recorder() : nullptr, trace::SpanKind::HostToDevice, ctx.lane(), traced_step_);
    in = dist.to_features(input, static_cast<size_t>(ctx.local_replica_id()));
    s.set_bytes(static_cast<int64_t>(in.features.bytes() + in.labels.bytes()));
  }
  Tensor stats = step_stats(ctx.device());
  enqueue_step(ctx, in, stats, false);
  return stats;
}

Trainer::StepResult Trainer::step_result(const Tensor& stats, const Batch& in) const {
  // The step's one host synchronisation.
  return result_of(read_stats(stats, logit_width_), in.size(), in.global_batch_size);
}

Trainer::StepResult Trainer::result_of(const StepReadback& back, int64_t examples, int64_t global_batch) {
  StepResult r;
  r.figures.scaled_loss = back.loss;
  r.examples = examples;
  r.figures.local_loss = examples ? back.loss * static_cast<double>(global_batch) / static_cast<double>(examples) : 0.0;
  r.correct = back.correct;
  return r;
}

const Tensor& Trainer::loss_scale(int replica, const Device& device, int64_t global_batch) {
  const float inverse = nn::inverse_global_batch(global_batch);
  LossScale& s = loss_scales_.at(static_cast<size_t>(replica));
  if (!s.inverse.defined()) s.inverse = Tensor::empty(Shape{}, device);
  if (s.batch != global_batch) {
    s.inverse.fill(inverse);
    s.batch = global_batch;
  }
  return s.inverse;
}

Trainer::Evaluation Trainer::evaluate(const Dataset& dataset) {
  const trace::ScopedSpan span(recorder(), trace::SpanKind::Evaluation, trace::Lane{trace::LaneKind::Run, 0}, -1);
  Evaluation e;
  const int64_t n = dataset.size();
  const int64_t batch = std::max<int64_t>(config_.training.batch_size, 256);
  const int classes = std::max(dataset.num_classes(), 1);
  e.confusion.assign(static_cast<size_t>(classes), std::vector<int64_t>(static_cast<size_t>(classes), 0));
  double loss_sum = 0;
  int64_t correct = 0;
  for (int64_t start = 0; start < n; start += batch) {
    Batch global = dataset.range(start, std::min(n, start + batch));
    // Every worker evaluates the whole set on its own replicas (weights are
    // identical everywhere): no collective, so no worker waits on another.
    auto parts = split_batch(global, strategy_->num_local_replicas(), strategy_->devices());
    auto results = strategy_->run(
        [&](ReplicaContext&, const Batch& in) {
          std::pair<double, std::vector<int32_t>> out{0.0, {}};
          if (in.size() == 0) return out;
          Tensor logits = (*model_)(in.features, false);
          Tensor per_example = (*loss_)(in.labels, logits);
          out.first = read_step(nn::sum_scaled(per_example, 1.0f), logits, Tensor()).loss;
          out.second = nn::argmax_rows(logits);
          return out;
        },
        parts);
    // Labels from the host's global batch: replica r holds the rows after those of replicas before it.
    const int32_t* labels = global.labels.ints();
    for (int r = 0; r < results.num_replicas(); ++r) {
      loss_sum += results[r].first;
      const auto& pred = results[r].second;
      for (size_t i = 0; i < pred.size(); ++i) {
        const int32_t truth = *labels++;
        correct += pred[i] == truth;
        if (truth >= 0 && truth < classes && pred[i] >= 0 && pred[i] < classes)
          e.confusion[static_cast<size_t>(truth)][static_cast<size_t>(pred[i])]++;
      }
    }
  }
  e.examples = n;
  e.loss = n ? loss_sum / static_cast<double>(n) : 0.0;
  e.accuracy = n ? static_cast<double>(correct) / static_cast<double>(n) : 0.0;
  return e;
}

Trainer::Evaluation Trainer::evaluate_checkpoint(const std::string& checkpoint) {
  if (!strategy_) prepare();
  if (!data_.validation || data_.validation->size() == 0)
    throw bad_input("dataset: the project's dataset has no test split to evaluate on");
  CheckpointManager::load_weights(checkpoint, *model_);
  return evaluate(*data_.validation);
}

std::vector<double> Trainer::Evaluation::per_class_accuracy() const {
  std::vector<double> out;
  for (size_t c = 0; c < confusion.size(); ++c) {
    int64_t total = 0;
    for (auto v : confusion[c]) total += v;
    out.push_back(total ? static_cast<double>(confusion[c][c]) / static_cast<double>(total) : 0.0);
  }
  return out;
}

void Trainer::enable_checkpoints(const std::string& dir) {
  checkpoints_ = std::make_unique<CheckpointManager>(dir, config_.training.checkpoint);
}

CheckpointInfo Trainer::restore(const std::string& checkpoint_dir) {
  if (!strategy_) prepare();
  // A restore remakes device scalars (the rate and step, dropout's counters)
  // that a captured step reads at fixed addresses: before the first capture only.
  if (step_graph_ && step_graph_->captures() > 0)
    throw runtime_error("restore: the training step is already captured as a graph; restore before run()");
  CheckpointInfo info = CheckpointManager::load(checkpoint_dir, *model_, optimizer_.get());
  start_ = info.position;
  callbacks_->restore(info.position.callbacks);
  last_validation_ = ValidationFigures{info.val_loss, info.val_accuracy, info.val_epoch};
  if (ps_) ps_->restore(info.position);
  if (info.project_hash != project_hash(config_))
    sink_.emit(LogEvent{"warning", "the checkpoint was written for a different model or data; continuing anyway", 0});
  return info;
}

void Trainer::save_checkpoint(const TrainingPosition& position) {
  if (!checkpoints_) return;
  const trace::ScopedSpan span(recorder(), trace::SpanKind::Checkpoint, trace::Lane{trace::LaneKind::Run, 0}, position.step);
  try {
    sync_model_from_servers();
    TrainingPosition at = position;
    at.callbacks = callbacks_->state();
    const std::string dir = checkpoints_->save(*model_, *optimizer_, at, last_validation_, strategy_->name(),
                                               strategy_->num_replicas_in_sync(), project_hash(config_));
    sink_.emit(CheckpointEvent{dir, position.step, position.epoch, elapsed()});
  } catch (const Error& e) {
    // A full disk must not end a long run: say so and keep training.
    log("warning", std::string("checkpoint not written: ") + e.what());
  }
}

void Trainer::pause() { paused_ = true; }

void Trainer::resume() {
  {
    std::lock_guard lock(pause_mutex_);
    paused_ = false;
  }
  pause_cv_.notify_all();
}

void Trainer::wait_while_paused() {
  if (!paused_) return;
  const double t0 = monotonic_seconds();
  log("info", "paused");
  std::unique_lock lock(pause_mutex_);
  pause_cv_.wait(lock, [&] { return !paused_ || stop_; });
  // Paused time does not count towards the run's wall time or samples/s.
  paused_seconds_ += monotonic_seconds() - t0;
  lock.unlock();
  if (!stop_) log("info", "resumed");
}

double Trainer::elapsed() const { return monotonic_seconds() - start_time_ - paused_seconds_; }

void Trainer::log(const std::string& level, const std::string& message) { sink_.emit(LogEvent{level, message, elapsed()}); }

void Trainer::sync_model_from_servers() {
  if (ps_) ps_->sync_model();
}

void Trainer::emit_run_started(int64_t steps_per_epoch) {
  const TrainingConfig& t = config_.training;
  RunStartedEvent started;
  started.project = config_.name;
  started.strategy = strategy_->name();
  for (auto& d : strategy_->devices()) started.devices.push_back(d.str());
  Cluster& cluster = strategy_->cluster();
  started.workers = cluster.size();
  if (cluster.size() > 1) {
    // Replica order is rank-major: worker w holds replicas [w*L, (w+1)*L).
    // Parameter-server ranks hold no replica: only workers are listed.
    started.devices.clear();
    for (int w = 0; w < (ps_ ? ps_->num_workers() : cluster.size()); ++w)
      for (auto& d : strategy_->devices()) started.devices.push_back("worker" + std::to_string(w) + "/" + d.str());
  }
  started.hosts = cluster.hosts();
  started.replicas = strategy_->num_replicas_in_sync();
  started.global_batch = t.batch_size;
  for (int r = 0; r < started.replicas; ++r)
    started.per_replica_batch.push_back(t.batch_size / started.replicas + (r < t.batch_size % started.replicas ? 1 : 0));
  started.steps_per_epoch = steps_per_epoch;
  started.epochs = t.epochs;
  started.dataset = data_.description;
  started.train_examples = data_.train->size();
  started.validation_examples = data_.validation ? data_.validation->size() : 0;
  started.params = model_->param_count();
  started.cross_device_ops = strategy_->num_replicas_in_sync() > 1 ? strategy_->cross_device_ops().name() : "none";
  started.sharded_update = strategy_->sharded_update();
  started.threads_per_replica = strategy_->threads_per_replica();
  if (ps_) ps_->describe(started);
  sink_.emit(started);
  // Asked for, not a default: more compute threads than logical CPUs take
  // turns on the cores, and every step waits for the last of them.
  if (const int cpus = hardware_threads(); t.threads > cpus)
    log("warning", "training.threads: " + std::to_string(t.threads) + " compute threads on " + std::to_string(cpus) +
                       " logical CPUs take turns on the cores and slow every step; choose at most " + std::to_string(cpus) +
                       ", or 0 for every core");
  if (start_.step > 0)
    sink_.emit(LogEvent{"info", "resumed at step " + std::to_string(start_.step) + " (epoch " + std::to_string(start_.epoch) +
                                    (start_.epoch_complete ? ", complete" : ", step " + std::to_string(start_.epoch_step)) + ")",
                        elapsed()});
}

bool Trainer::record_step(StepEvent& ev, TrainingPosition& pos, int64_t batch, int64_t correct, EpochProgress& ep,
                          FinishedEvent& fin) {
  return record_step_at(optimizer_->learning_rate(), ev, pos, batch, correct, ep, fin);
}

bool Trainer::record_step_at(float lr, StepEvent& ev, TrainingPosition& pos, int64_t batch, int64_t correct,
                             EpochProgress& ep, FinishedEvent& fin) {
  ++pos.step;
  ++pos.epoch_step;
  ev.step = pos.step;
  ev.epoch = pos.epoch;
  ev.epoch_step = pos.epoch_step;
  pos.epoch_correct += correct;
  pos.epoch_seen += batch;
  if (batch > 0) ev.accuracy = static_cast<double>(correct) / static_cast<double>(batch);
  ep.samples += batch;
  pos.epoch_loss_sum += ev.loss * static_cast<double>(batch);
  ev.time = elapsed();
  ev.lr = shortest_decimal(lr);  // 0.001, not 0.0010000000474974513
  ev.samples_per_sec = static_cast<double>(ep.samples) / std::max(1e-9, ev.time - ep.start);
  sink_.emit(ev);
  flush_trace(ev.step);
  if (device_stats_)
    if (auto stats = device_stats_->sample(ev.time)) sink_.emit(*stats);
  if (std::isfinite(ev.loss)) return true;
  fin.status = RunStatus::Failed;
  fin.failure = FailureKind::Diverged;
  fin.message = "loss became " + std::string(std::isnan(ev.loss) ? "NaN" : "infinite") + " at step " +
                std::to_string(pos.step) + " (epoch " + std::to_string(pos.epoch) +
                "): training diverged; try a lower learning rate";
  return false;
}

void Trainer::run_epoch_sync(TrainingPosition& pos, int64_t steps_per_epoch, DistributedDataset& dist, EpochProgress& ep,
                             FinishedEvent& fin) {
  Cluster& cluster = strategy_->cluster();
  // A step still in flight is finished before a pause shows the model, a
  // stop or checkpoint saves it, and at the epoch's end.
  auto settle = [&] { return !queued_ || finish_queued(pos, ep, fin); };
  last_step_end_ = monotonic_seconds();
  while (pos.epoch_step + (queued_ ? 1 : 0) < steps_per_epoch) {
    // Read once: a pause arriving after the step in flight was left unread
    // waits for the next boundary, so the paused dashboard shows every step.
    const bool pausing = paused_;
    if (queued_ && (pausing || checkpoint_due(queued_->step)) && !settle()) return;
    if (pausing) wait_while_paused();
    // Across workers a stop takes effect only once all have heard of it
    // (through the step's exchange); alone, at once.
    if (cluster.size() == 1 && stop_) ep.stopping = true;
    if (ep.stopping) {
      settle();
      return;
    }
    const int64_t step = pos.step + (queued_ ? 2 : 1);
    // Alone, the schedule decides at each step's start. Across workers every
    // rank begins the first burst with its first step (the same on all), and
    // the later ones where rank 0's step exchange says (finish_step): so all
    // ranks' device lanes cover the same steps, and a merged trace lines
    // them up.
    device_marks_ = tracer_ && (cluster.size() == 1 || !device_schedule_.started()
                                    ? device_schedule_.mark_step(step, monotonic_seconds())
                                    : device_schedule_.marks(step));
    std::optional<PerReplica<Batch>> inputs;
    {
      const trace::ScopedSpan wait(recorder(), trace::SpanKind::DataWait, trace::Lane{trace::LaneKind::Run, 0}, step);
      dist.trace(recorder(), device_spans(), step);
      inputs = dist.next();
    }
    if (!inputs) break;
    set_step_learning_rate(step - 1);
    const float lr = optimizer_->learning_rate();
    const double t0 = monotonic_seconds(), c0 = strategy_->collective_seconds();
    auto results = run_step(*inputs, step, dist);
    strategy_->cross_device_ops().throw_if_failed();
    const double compute = (monotonic_seconds() - t0) - (strategy_->collective_seconds() - c0);
    // The step before, in flight until now, is read while this one runs.
    if (!settle()) return;
    if (!results) {
      QueuedStep q{step, lr, queued_graph_, {}, {}};
      for (const Batch& b : *inputs) {
        q.examples.push_back(b.size());
        q.global_batch.push_back(b.global_batch_size);
      }
      queued_ = std::move(q);
      continue;
    }
    if (!finish_step(*results, compute, lr, pos, ep, fin)) return;
  }
  settle();
}

bool Trainer::finish_queued(TrainingPosition& pos, EpochProgress& ep, FinishedEvent& fin) {
  const QueuedStep q = std::move(*queued_);
  queued_.reset();
  const std::vector<StepReadback> back = stats_queue_->pop(logit_width_);
  // The step has completed: its marks (its graph's, when replayed) are read.
  drain_device_spans(q.step, q.graph);
  std::vector<StepResult> out;
  for (size_t r = 0; r < back.size(); ++r) out.push_back(result_of(back[r], q.examples[r], q.global_batch[r]));
  // The device runs steps back to back: a step's time is the interval
  // between their figures coming in.
  return finish_step(PerReplica<StepResult>(std::move(out)), monotonic_seconds() - last_step_end_, q.lr, pos, ep, fin);
}

bool Trainer::checkpoint_due(int64_t step) const {
  const int64_t every = config_.training.checkpoint.every_steps;
  return every > 0 && step % every == 0;
}

bool Trainer::finish_step(const PerReplica<StepResult>& results, double compute_seconds, float lr, TrainingPosition& pos,
                          EpochProgress& ep, FinishedEvent& fin) {
  Cluster& cluster = strategy_->cluster();
  last_step_end_ = monotonic_seconds();
  // One exchange per step gives every worker every replica's figures
  // (and a stop request from any of them), so all decide alike.
  StepFigures mine;
  for (auto& r : results) {
    mine.replicas.push_back(r.figures);
    mine.worker.correct += static_cast<double>(r.correct);
    mine.worker.examples += static_cast<double>(r.examples);
  }
  mine.worker.compute_seconds = compute_seconds;
  mine.worker.stop = stop_ ? 1.0 : 0.0;
  // Rank 0 decides when the workers' next device-lane burst begins
  // (run_epoch_sync): with a step none has started. This exchange is for
  // step pos.step + 1, and one step may be in flight beyond it.
  if (cluster.size() > 1 && cluster.rank() == 0 && tracer_)
    if (const auto first = device_schedule_.due(monotonic_seconds(), pos.step + 3))
      mine.worker.device_burst = static_cast<double>(*first);
  const std::vector<StepFigures> all = cluster.size() > 1
                                           ? StepFigures::unpack_all(cluster.all_gather(mine.pack()), results.num_replicas())
                                           : std::vector<StepFigures>{mine};
  if (cluster.size() > 1 && all[0].worker.device_burst >= 0)
    device_schedule_.begin(static_cast<int64_t>(all[0].worker.device_burst), monotonic_seconds());
  StepEvent ev;
  int64_t batch = 0, correct = 0;
  ep.stopping = false;
  for (const StepFigures& w : all) {
    for (const StepFigures::Replica& r : w.replicas) {
      ev.loss += r.scaled_loss;
      ev.replica_losses.push_back(r.local_loss);
      if (!std::isnan(r.compute_seconds)) ev.replica_step_times.push_back(r.compute_seconds);
    }
    correct += static_cast<int64_t>(w.worker.correct);
    batch += static_cast<int64_t>(w.worker.examples);
    ev.worker_step_times.push_back(w.worker.compute_seconds);
    ep.stopping = ep.stopping || w.worker.stop != 0.0;
  }
  if (!record_step_at(lr, ev, pos, batch, correct, ep, fin)) return false;
  if (checkpoint_due(pos.step) && pos.epoch_step < steps_per_epoch_) {
    pos.elapsed = elapsed();
    save_checkpoint(pos);
  }
  return true;
}

bool Trainer::finish_epoch(TrainingPosition& pos, const EpochProgress& ep, FinishedEvent& fin) {
  EpochEvent ee;
  ee.epoch = pos.epoch;
  ee.loss = pos.epoch_seen ? pos.epoch_loss_sum / static_cast<double>(pos.epoch_seen) : 0.0;
  ee.accuracy = pos.epoch_seen ? static_cast<double>(pos.epoch_correct) / static_cast<double>(pos.epoch_seen) : 0.0;
  ee.samples_per_sec = static_cast<double>(ep.samples) / std::max(1e-9, elapsed() - ep.start);
  if (data_.validation && data_.validation->size() > 0) {
    Evaluation v = evaluate(*data_.validation);
    ee.val_loss = v.loss;
    ee.val_accuracy = v.accuracy;
    last_validation_ = ValidationFigures{v.loss, v.accuracy, pos.epoch};
  }
  ee.lr = shortest_decimal(optimizer_->learning_rate());
  const TrainingCallbacks::Decision d =
      callbacks_->end_epoch(pos.epoch, EpochFigures{ee.loss, ee.accuracy, ee.val_loss, ee.val_accuracy}, ee.lr);
  ee.best = d.best;
  ee.time = elapsed();
  sink_.emit(ee);
  for (const std::string& note : d.notes) sink_.emit(LogEvent{"info", note, ee.time});
  fin.epochs_completed = pos.epoch;
  pos.epoch_complete = true;
  pos.elapsed = elapsed();
  // Keras ends such a run as a normal one; the finished event's message says
  // why it ended. (A stop decided at the last epoch changes nothing.)
  const bool stop_early = d.stop && pos.epoch < config_.training.epochs;
  if (stop_early) {
    fin.message = *d.stop;
    fin.stopped_early = true;
  }
  // A step checkpoint due at the epoch's last step was left to here (finish_step), to hold the epoch's figures.
  if (config_.training.checkpoint.every_epoch || checkpoint_due(pos.step) || pos.epoch == config_.training.epochs ||
      stop_early)
    save_checkpoint(pos);
  return !stop_early;
}

void Trainer::set_step_learning_rate(int64_t step) {
  if (!schedule_) return;
  optimizer_->set_learning_rate(static_cast<float>(callbacks_->learning_rate(schedule_->at(step))));
}

void Trainer::fail_on_error(FinishedEvent& fin, const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    fin.status = RunStatus::Failed;
    fin.failure = failure_kind_of(e);
    fin.message = e.what();
  } catch (const std::exception& e) {
    fin.status = RunStatus::Failed;
    fin.failure = FailureKind::Internal;
    fin.message = std::string("internal error: ") + e.what();
  }
}

FinishedEvent Trainer::finish_run(FinishedEvent fin, const TrainingPosition& pos) {
  if (fin.status == RunStatus::Completed && fin.message.empty())
    fin.message = "completed " + std::to_string(fin.epochs_completed) + (fin.epochs_completed == 1 ? " epoch" : " epochs");
  fin.steps = pos.step;
  fin.time = elapsed();
  if (tracer_) fail_on_error(fin, [&] { tracer_->close(fin.time); });
  if (fin.status == RunStatus::Failed) sink_.emit(LogEvent{"error", fin.message, fin.time});
  sink_.emit(fin);
  return fin;
}

FinishedEvent Trainer::run() {
  if (!strategy_) prepare();
  // A resumed run's clock continues from the checkpoint's training time.
  start_time_ = monotonic_seconds() - start_.elapsed;
  const TrainingConfig& t = config_.training;
  const bool across_processes = ps_ && ps_->multi_process();
  DistributedDataset dist = across_processes ? ps_->distribute(pipeline_) : strategy_->distribute(pipeline_);
  // Host replicas whose threads take every core gather their own input: a
  // prefetch thread gathering for them would have no core of its own
  // (gather_in_replicas itself leaves replicas off the host alone).
  const bool cores_taken = strategy_->num_local_replicas() * strategy_->threads_per_replica() >= hardware_threads();
  dist.gather_in_replicas(!ps_ && !step_graph_ && cores_taken);
  int64_t steps_per_epoch = dist.steps_per_epoch();
  if (t.max_steps_per_epoch > 0) steps_per_epoch = std::min(steps_per_epoch, t.max_steps_per_epoch);
  steps_per_epoch_ = steps_per_epoch;
  emit_run_started(steps_per_epoch);
  schedule_ = std::make_unique<LearningRateSchedule>(t.lr_schedule, t.optimizer.learning_rate, steps_per_epoch, t.epochs);

  FinishedEvent fin;
  TrainingPosition pos = start_.epoch_complete ? next_epoch(start_) : start_;
  fin.epochs_completed = pos.epoch - 1;
  fail_on_error(fin, [&] {
    if (across_processes) {
      ps_->run_processes(pos, steps_per_epoch, dist, fin);
      return;
    }
    for (; pos.epoch <= t.epochs; pos = next_epoch(pos)) {
      const int epoch = pos.epoch;
      dist.begin_epoch(epoch - 1, pos.epoch_step);
      EpochProgress ep;
      ep.start = elapsed();
      if (ps_) ps_->run_epoch(pos, steps_per_epoch, dist, ep, fin);
      else run_epoch_sync(pos, steps_per_epoch, dist, ep, fin);
      if (fin.status == RunStatus::Failed) break;
      if (ep.stopping) {
        fin.status = RunStatus::Stopped;
        fin.message = stop_message(pos);
        pos.elapsed = elapsed();
        save_checkpoint(pos);
        break;
      }
      if (!finish_epoch(pos, ep, fin)) break;
    }
  });
  return finish_run(fin, pos);
}

}  // namespace strata
