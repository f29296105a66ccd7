// Training throughput of the Fashion-MNIST MLP 784-256-128-10 (ReLU, Adam
// 1e-3, sparse CE from logits), or of a project's model (--project, e.g. the
// TF-tutorial CNN), through the real Trainer, as strata-run would train it. Prints one JSON line per (configuration,
// repetition) and a summary line per configuration with median, min and max samples/s.
//
// Timing: the Trainer emits a step event after every step with a timestamp.
// We sum the intervals between consecutive step events of the same epoch,
// after the warm-up steps. That leaves out data loading, model building, the
// first step of each epoch (pipeline restart) and the end-of-epoch
// validation, and keeps everything a step costs in steady state: the input
// pipeline hand-off, forward, backward, the all-reduce, Adam, the loss and
// accuracy the step reports.
//
//   bench_train                         # the three default configurations
//   bench_train --strategy mirrored --replicas 2 --threads 2 --batch 256
//   bench_train --project resources/examples/fashion-cnn.strata --batch 64 --threads 1
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "BenchUtil.h"
#include "core/Error.h"
#include "project/ProjectFile.h"
#include "train/Trainer.h"

namespace {

using namespace strata::bench;
using strata::RunConfig;

struct BenchConfig {
  std::string strategy = "one_device";
  int replicas = 1;
  int threads = 1;  // in all, divided among the replicas
  std::string sharded_update = "auto";
  bool trace = false;  // the step timeline on, written to a trace file
};

struct Options {
  int64_t batch = 128;
  int64_t steps = 400;
  int64_t warmup = 50;
  int reps = 3;
  std::string data_dir;  // empty: the Debian package's directory
  std::string cross_device_ops = "auto";
  std::string project;                      // the model of this project instead of the MLP
  std::optional<RunConfig> project_config;  // loaded once, in main
  std::vector<BenchConfig> configs;
  bool trace_pairs = false;     // --trace: every configuration also with the step timeline on
  std::optional<int> prefetch;  // the project default when not given
};

// Records each step's timestamp; nothing else is kept, so the sink costs the
// step nothing measurable.
class StepClock final : public strata::EventSink {
public:
  struct Mark {
    int epoch;
    int64_t step;
    double time;
  };
  std::vector<Mark> marks;
  std::string failure;
  void emit(const strata::Event& e) override {
    if (auto* s = std::get_if<strata::StepEvent>(&e)) marks.push_back({s->epoch, s->step, s->time});
    if (auto* f = std::get_if<strata::FinishedEvent>(&e))
      if (f->status != strata::RunStatus::Completed) failure = f->message;
  }
};

RunConfig bench_config(const Options& o, const BenchConfig& b) {
  RunConfig c;
  c.name = "mlp-784-256-128-10";
  c.dataset.kind = "fashion_mnist";
  c.dataset.path = o.data_dir;
  c.layers = {
      {{"type", "flatten"}},
      {{"type", "dense"}, {"units", 256}, {"activation", "relu"}},
      {{"type", "dense"}, {"units", 128}, {"activation", "relu"}},
      {{"type", "dense"}, {"units", 10}, {"activation", "linear"}},
  };
  if (o.project_config) {
    // Another model (e.g. the TF-tutorial CNN) on the same data, loop and
    // optimizer: only the layers come from the project.
    c.name = o.project_config->name;
    c.layers = o.project_config->layers;
  }
  c.training.batch_size = o.batch;
  c.training.optimizer.type = "adam";
  c.training.optimizer.learning_rate = 1e-3f;
  c.training.from_logits = true;
  c.training.shuffle = true;
  c.training.threads = b.threads;
  if (o.prefetch) c.training.prefetch = *o.prefetch;
  // Enough whole epochs for warm-up + measured steps; the measured window
  // skips epoch boundaries (see above).
  const int64_t per_epoch = (60000 + o.batch - 1) / o.batch;
  const int64_t total = o.warmup + o.steps;
  c.training.epochs = static_cast<int>((total + per_epoch - 1) / per_epoch);
  c.training.max_steps_per_epoch = std::min(per_epoch, total);
  c.strategy.name = b.strategy;
  for (int r = 0; r < b.replicas; ++r) c.strategy.devices.push_back("cpu:" + std::to_string(r));
  c.strategy.cross_device_ops = o.cross_device_ops;
  c.strategy.sharded_update = b.sharded_update;
  if (b.trace) {
    c.trace.enabled = true;
    c.trace.file = (std::filesystem::temp_directory_path() / "bench_train_trace.json").string();
  }
  return c;
}

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: bench_train [--batch N] [--steps N] [--warmup N] [--reps N]\n"
               "                   [--strategy one_device|mirrored|central_storage] [--replicas N] [--threads N]\n"
               "                   [--cross-device-ops auto|in_process|reduce_to_one_device] [--sharded-update auto|on|off]\n"
               "                   [--data DIR] [--prefetch N] [--trace: each configuration also with the step timeline on]\n"
               "                   [--project FILE: train that project's model instead of the MLP]\n"
               "Without --strategy/--threads/--replicas/--sharded-update runs: one_device x1 thread, one_device\n"
               "x2 threads, mirrored 2 replicas x 1 thread with and without the sharded update (repetitions\n"
               "interleaved).\n");
  std::exit(code);
}

Options parse(int argc, char** argv) {
  Options o;
  BenchConfig single;
  bool custom = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    // The single configuration's settings: any of them replaces the default set.
    auto single_setting = [&](auto& field, auto parse) {
      field = parse(value());
      custom = true;
    };
    auto text = [](const std::string& v) { return v; };
    auto integer = [](const std::string& v) { return std::stoi(v); };
    if (a == "--batch") o.batch = std::stoll(value());
    else if (a == "--steps") o.steps = std::stoll(value());
    else if (a == "--warmup") o.warmup = std::stoll(value());
    else if (a == "--reps") o.reps = std::stoi(value());
    else if (a == "--data") o.data_dir = value();
    else if (a == "--cross-device-ops") o.cross_device_ops = value();
    else if (a == "--project") o.project = value();
    else if (a == "--prefetch") o.prefetch = std::stoi(value());
    else if (a == "--strategy") single_setting(single.strategy, text);
    else if (a == "--replicas") single_setting(single.replicas, integer);
    else if (a == "--threads") single_setting(single.threads, integer);
    else if (a == "--sharded-update") single_setting(single.sharded_update, text);
    else if (a == "--trace") o.trace_pairs = true;
    else if (a == "-h" || a == "--help") usage(0);
    else usage(2);
  }
  if (o.batch <= 0 || o.steps <= 0 || o.warmup < 0 || o.reps <= 0) usage(2);
  if (custom) {
    if (single.strategy != "one_device" && single.replicas == 1 && single.threads > 1) single.replicas = single.threads;
    if (single.strategy == "one_device") single.replicas = 1;
    single.threads = std::max(single.threads, single.replicas);
    o.configs = {single};
  } else {
    // Mirrored with and without the sharded optimizer update, side by side.
    o.configs = {{"one_device", 1, 1}, {"one_device", 1, 2}, {"mirrored", 2, 2, "on"}, {"mirrored", 2, 2, "off"}};
  }
  if (o.trace_pairs) {
    std::vector<BenchConfig> paired;
    for (BenchConfig c : o.configs) {
      paired.push_back(c);
      c.trace = true;
      paired.push_back(c);
    }
    o.configs = paired;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  std::vector<std::vector<double>> results(o.configs.size());
  try {
    if (!o.project.empty()) o.project_config = strata::load_project(o.project);
    // Repetitions interleaved across configurations, so a burst of load from
    // another process on this shared machine spreads over all of them.
    for (int rep = 1; rep <= o.reps; ++rep) {
      for (size_t ci = 0; ci < o.configs.size(); ++ci) {
        const BenchConfig& b = o.configs[ci];
        StepClock clock;
        const RunConfig config = bench_config(o, b);
        strata::Trainer trainer(config, clock);
        trainer.prepare();
        trainer.run();
        if (!clock.failure.empty()) throw std::runtime_error("training failed: " + clock.failure);
        double seconds = 0;
        int64_t measured = 0;
        for (size_t i = 1; i < clock.marks.size(); ++i) {
          const auto& m = clock.marks[i];
          if (m.step <= o.warmup || m.epoch != clock.marks[i - 1].epoch) continue;
          if (measured == o.steps) break;
          seconds += m.time - clock.marks[i - 1].time;
          ++measured;
        }
        const double sps = static_cast<double>(measured * o.batch) / seconds;
        results[ci].push_back(sps);
        nlohmann::json j = {{"bench", "train"},
                            {"model", config.name},
                            {"strategy", b.strategy},
                            {"replicas", b.replicas},
                            {"threads", b.threads},
                            {"threads_per_replica", trainer.strategy().threads_per_replica()},
                            {"cross_device_ops", b.replicas > 1 ? trainer.strategy().cross_device_ops().name() : "none"},
                            {"sharded_update", trainer.strategy().sharded_update()},
                            {"trace", b.trace},
                            // Slot variables (Adam's m and v) over all replicas: once, or once per replica.
                            {"optimizer_state_bytes", trainer.optimizer().state_bytes()},
                            {"batch", o.batch},
                            {"steps", measured},
                            {"rep", rep},
                            {"seconds", seconds},
                            {"samples_per_sec", sps}};
        std::cout << j.dump() << std::endl;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_train: " << e.what() << "\n";
    return 1;
  }
  for (size_t ci = 0; ci < o.configs.size(); ++ci) {
    const auto& v = results[ci];
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    nlohmann::json j = {{"bench", "train"},
                        {"summary", true},
                        {"strategy", o.configs[ci].strategy},
                        {"replicas", o.configs[ci].replicas},
                        {"threads", o.configs[ci].threads},
                        {"sharded_update", o.configs[ci].sharded_update},
                        {"trace", o.configs[ci].trace},
                        {"batch", o.batch},
                        {"reps", v.size()},
                        {"median_samples_per_sec", median(v)},
                        {"min_samples_per_sec", *lo},
                        {"max_samples_per_sec", *hi}};
    std::cout << j.dump() << std::endl;
  }
  return 0;
}
