// Per-step device discipline on the simulated accelerator (docs/architecture.md §10): after
// warm-up, how many device allocations, host<->device copies (and bytes) and
// host synchronisations one training step costs, per strategy and model. The
// figures are counted by the sim devices' backends (what a CUDA backend would
// have to do), so they are exact, not timed. The target: zero allocations and
// one synchronisation per replica device per step (reading the step's loss,
// accuracy count and error flag).
//
//   bench_device_discipline [--warmup N] [--steps N] [--batch N]
//   (runs the examples' MLP and CNN under one_device, mirrored x2, x3 and central_storage x2)
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/Backend.h"
#include "core/Error.h"
#include "project/ProjectFile.h"
#include "train/Trainer.h"

namespace {

using strata::Device;
using strata::DeviceKind;

struct Totals {
  int64_t allocations = 0, h2d = 0, h2d_bytes = 0, d2h = 0, d2h_bytes = 0, d2d = 0, syncs = 0;
  Totals operator-(const Totals& o) const {
    return {allocations - o.allocations, h2d - o.h2d, h2d_bytes - o.h2d_bytes, d2h - o.d2h,
            d2h_bytes - o.d2h_bytes,     d2d - o.d2d, syncs - o.syncs};
  }
};

Totals read_counters(int devices) {
  Totals t;
  for (int i = 0; i < devices; ++i) {
    auto& c = strata::backend_for(Device{DeviceKind::Sim, i}).counters();
    t.allocations += c.allocations;
    t.h2d += c.h2d;
    t.h2d_bytes += c.h2d_bytes;
    t.d2h += c.d2h;
    t.d2h_bytes += c.d2h_bytes;
    t.d2d += c.d2d;
    t.syncs += c.syncs;
  }
  return t;
}

// Snapshots the counters when the warm-up ends and when the window ends; the
// step events arrive on the training thread after each step's sync point.
class Window final : public strata::EventSink {
public:
  Window(int64_t warmup, int64_t steps, int devices) : warmup_(warmup), end_(warmup + steps), devices_(devices) {}
  Totals begin, end;
  std::string failure;
  void emit(const strata::Event& e) override {
    if (auto* s = std::get_if<strata::StepEvent>(&e)) {
      if (s->step == warmup_) begin = read_counters(devices_);
      if (s->step == end_) end = read_counters(devices_);
    }
    if (auto* f = std::get_if<strata::FinishedEvent>(&e))
      if (f->status != strata::RunStatus::Completed) failure = f->message;
  }

private:
  int64_t warmup_, end_;
  int devices_;
};

}  // namespace

int main(int argc, char** argv) {
  int64_t warmup = 10, steps = 20, batch = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--warmup") warmup = std::stoll(argv[i + 1]);
    else if (a == "--steps") steps = std::stoll(argv[i + 1]);
    else if (a == "--batch") batch = std::stoll(argv[i + 1]);
  }
  struct Case {
    const char* model;
    const char* strategy;
    int replicas;
  };
  const std::vector<Case> cases = {{"mlp", "one_device", 1}, {"mlp", "mirrored", 2}, {"mlp", "mirrored", 3},
                                   {"mlp", "central_storage", 2}, {"cnn", "one_device", 1}, {"cnn", "mirrored", 2},
                                   {"cnn", "mirrored", 3}, {"cnn", "central_storage", 2}};
  std::printf("%-5s %-16s %8s %12s %10s %14s %10s %10s %12s\n", "model", "strategy", "replicas", "allocs/step",
              "h2d/step", "h2d bytes/step", "d2h/step", "d2d/step", "syncs/step");
  try {
    for (const Case& c : cases) {
      const std::string project = std::string(STRATA_SOURCE_DIR) + "/resources/examples/fashion-" + c.model + ".strata";
      strata::RunConfig config = strata::load_project(project);
      config.training.epochs = 1;
      config.training.max_steps_per_epoch = warmup + steps + 1;
      if (batch > 0) config.training.batch_size = batch;
      config.strategy.name = c.strategy;
      config.strategy.devices.clear();
      for (int r = 0; r < c.replicas; ++r) config.strategy.devices.push_back("sim:" + std::to_string(r));
      Window window(warmup, steps, c.replicas);
      strata::Trainer trainer(config, window);
      trainer.prepare();
      trainer.run();
      if (!window.failure.empty()) throw std::runtime_error(window.failure);
      const Totals d = window.end - window.begin;
      auto per = [&](int64_t v) { return static_cast<double>(v) / static_cast<double>(steps); };
      std::printf("%-5s %-16s %8d %12.2f %10.2f %14.0f %10.2f %10.2f %12.2f\n", c.model, c.strategy, c.replicas,
                  per(d.allocations), per(d.h2d), per(d.h2d_bytes), per(d.d2h), per(d.d2d), per(d.syncs));
      nlohmann::json j = {{"bench", "device_discipline"}, {"model", c.model},          {"strategy", c.strategy},
                          {"replicas", c.replicas},         {"batch", config.training.batch_size},
                          {"steps", steps},                 {"allocations_per_step", per(d.allocations)},
                          {"h2d_per_step", per(d.h2d)},     {"h2d_bytes_per_step", per(d.h2d_bytes)},
                          {"d2h_per_step", per(d.d2h)},     {"d2d_per_step", per(d.d2d)},
                          {"syncs_per_step", per(d.syncs)}};
      std::cerr << j.dump() << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_device_discipline: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
