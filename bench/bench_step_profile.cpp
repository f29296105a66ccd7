// Where a training step's time goes: the Trainer's step (the Fashion-MNIST MLP,
// Adam, sparse CE from logits) rebuilt on the public strategy API with a
// timer around each phase. Prints one JSON line per configuration with the
// mean microseconds per step of each phase, per replica:
//
//   data       waiting for the next global batch (prefetch thread hand-off,
//              split over the replicas); on the driving thread, between steps
//   forward    the model's forward pass, recorded on the tape
//   loss       per-example loss and compute_average_loss
//   backward   tape.gradient
//   imbalance  waiting at a barrier for the slowest replica before the
//              all-reduce (0 for one replica)
//   allreduce  the gradient all-reduce itself (fusion packing included)
//   optimizer  Adam's update of this replica's copy
//   metrics    loss.item() and count_correct, as the Trainer reports them
//   dispatch   the rest of the step: strategy.run's hand-off to the replica
//              threads and back, the step's bookkeeping
//
//   bench_step_profile                      # one_device x1, one_device x2, mirrored 2x1
//   bench_step_profile --strategy mirrored --replicas 2 --threads 2 --steps 400
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "distribute/ReplicaContext.h"
#include "distribute/Strategies.h"
#include "nn/GradientTape.h"
#include "nn/Metrics.h"
#include "train/DataSource.h"
#include "train/ModelFactory.h"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

enum Phase { Forward, Loss, Backward, Imbalance, AllReduce, Optimizer, Metrics, kPhases };
const char* kPhaseNames[kPhases] = {"forward", "loss", "backward", "imbalance", "allreduce", "optimizer", "metrics"};

// Forwards to the replica's real context, timing the all-reduce and, before
// it, the wait for the slowest replica.
class TimedSync final : public strata::ReplicaSync {
public:
  TimedSync(strata::ReplicaContext& ctx, double* phases) : ctx_(ctx), phases_(phases) {}
  int replica_id_in_sync_group() const override { return ctx_.replica_id_in_sync_group(); }
  int num_replicas_in_sync() const override { return ctx_.num_replicas_in_sync(); }
  void all_reduce_sum(std::vector<strata::Tensor>& tensors) override {
    auto t0 = Clock::now();
    if (ctx_.num_replicas_in_sync() > 1) ctx_.barrier();
    phases_[Imbalance] += since(t0);
    t0 = Clock::now();
    ctx_.all_reduce_sum(tensors);
    phases_[AllReduce] += since(t0);
    all_reduce_done_ = Clock::now();
  }
  bool variables_shared() const override { return ctx_.variables_shared(); }
  void barrier() override { ctx_.barrier(); }
  Clock::time_point all_reduce_done_;

private:
  strata::ReplicaContext& ctx_;
  double* phases_;
};

struct Config {
  std::string strategy = "one_device";
  int replicas = 1;
  int threads = 1;
};

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: bench_step_profile [--batch N] [--steps N] [--warmup N] [--strategy NAME] [--replicas N]\n"
               "                          [--threads N] [--fusion-bytes N]\n");
  std::exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 128, steps = 400, warmup = 50, fusion = 4 << 20;
  Config single;
  bool custom = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    if (a == "--batch") batch = std::stoll(value());
    else if (a == "--steps") steps = std::stoll(value());
    else if (a == "--warmup") warmup = std::stoll(value());
    else if (a == "--fusion-bytes") fusion = std::stoll(value());
    else if (a == "--strategy") { single.strategy = value(); custom = true; }
    else if (a == "--replicas") { single.replicas = std::stoi(value()); custom = true; }
    else if (a == "--threads") { single.threads = std::stoi(value()); custom = true; }
    else if (a == "-h" || a == "--help") usage(0);
    else usage(2);
  }
  std::vector<Config> configs = {{"one_device", 1, 1}, {"one_device", 1, 2}, {"mirrored", 2, 2}};
  if (custom) {
    single.threads = std::max(single.threads, single.replicas);
    configs = {single};
  }

  try {
    strata::DatasetConfig dc;  // Fashion-MNIST, found automatically
    strata::LoadedData data = strata::load_data(dc, 42);
    strata::RunConfig rc;
    rc.layers = {
        {{"type", "flatten"}},
        {{"type", "dense"}, {"units", 256}, {"activation", "relu"}},
        {{"type", "dense"}, {"units", 128}, {"activation", "relu"}},
        {{"type", "dense"}, {"units", 10}, {"activation", "linear"}},
    };
    for (const Config& c : configs) {
      strata::StrategyOptions so;
      for (int r = 0; r < c.replicas; ++r) so.devices.push_back(strata::Device{strata::DeviceKind::Cpu, r});
      so.threads = c.threads;
      so.fusion_bytes = static_cast<size_t>(fusion);
      auto strategy = strata::make_strategy(c.strategy, so);
      std::unique_ptr<strata::nn::Sequential> model;
      std::unique_ptr<strata::nn::Optimizer> optimizer;
      {
        auto scope = strategy->scope();
        model = strata::make_model(rc);
        model->build(data.train->example_shape());
        optimizer = strata::make_optimizer(rc.training.optimizer);
      }
      auto loss_fn = strata::make_loss(rc.training);
      auto vars = model->trainable_variables();
      strata::PipelineOptions po;
      po.batch_size = batch;
      po.seed = 42;
      auto pipeline = std::make_shared<strata::BatchPipeline>(data.train, po);
      strata::DistributedDataset dist = strategy->distribute(pipeline);

      const int n = strategy->num_replicas_in_sync();
      std::vector<std::vector<double>> phases(static_cast<size_t>(n), std::vector<double>(kPhases, 0.0));
      double data_us = 0, step_us = 0;
      int64_t measured = 0, done = 0, epoch = 0;
      dist.begin_epoch(epoch);
      while (measured < steps) {
        auto t0 = Clock::now();
        auto inputs = dist.next();
        if (!inputs) {
          dist.begin_epoch(++epoch);
          continue;
        }
        const bool timed = ++done > warmup;
        const double d = since(t0);
        std::vector<std::vector<double>> local(static_cast<size_t>(n), std::vector<double>(kPhases, 0.0));
        const auto s0 = Clock::now();
        strategy->run(
            [&](strata::ReplicaContext& ctx, const strata::Batch& in) {
              double* ph = local[static_cast<size_t>(ctx.replica_id_in_sync_group())].data();
              TimedSync sync(ctx, ph);
              auto t = Clock::now();
              strata::GradientTape tape;
              strata::Tensor logits = (*model)(in.features, true, tape);
              ph[Forward] += since(t);
              t = Clock::now();
              strata::Tensor per_example = (*loss_fn)(in.labels, logits);
              strata::Tensor loss = strata::nn::compute_average_loss(per_example, in.global_batch_size);
              ph[Loss] += since(t);
              t = Clock::now();
              std::vector<strata::Tensor> grads = tape.gradient(loss, vars);
              ph[Backward] += since(t);
              optimizer->apply_gradients(sync, std::move(grads), vars);
              ph[Optimizer] += since(sync.all_reduce_done_);
              t = Clock::now();
              double l = loss.item();
              int64_t correct = in.size() ? strata::nn::count_correct(logits, in.labels) : 0;
              ph[Metrics] += since(t);
              return l + static_cast<double>(correct) * 0.0;
            },
            *inputs);
        const double s = since(s0);
        if (timed) {
          ++measured;
          data_us += d;
          step_us += s;
          for (int r = 0; r < n; ++r)
            for (int p = 0; p < kPhases; ++p) phases[static_cast<size_t>(r)][static_cast<size_t>(p)] += local[static_cast<size_t>(r)][static_cast<size_t>(p)];
        }
      }
      const double m = static_cast<double>(measured);
      nlohmann::json j = {{"bench", "step_profile"}, {"strategy", c.strategy}, {"replicas", n},
                          {"threads", c.threads},     {"batch", batch},        {"steps", measured}};
      j["us_per_step"] = (data_us + step_us) / m;
      j["samples_per_sec"] = static_cast<double>(batch) * m / ((data_us + step_us) * 1e-6);
      j["data_us"] = data_us / m;
      nlohmann::json per = nlohmann::json::array();
      for (int r = 0; r < n; ++r) {
        nlohmann::json pr;
        double sum = 0;
        for (int p = 0; p < kPhases; ++p) {
          pr[kPhaseNames[p]] = phases[static_cast<size_t>(r)][static_cast<size_t>(p)] / m;
          sum += phases[static_cast<size_t>(r)][static_cast<size_t>(p)] / m;
        }
        pr["dispatch"] = step_us / m - sum;
        per.push_back(pr);
      }
      j["replica_us"] = per;
      std::cout << j.dump() << std::endl;
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_step_profile: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
