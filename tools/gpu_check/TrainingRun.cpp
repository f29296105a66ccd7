#include "TrainingRun.h"

#include <algorithm>
#include <mutex>

#include "ResultComparison.h"
#include "distribute/collectives/CrossDeviceOps.h"
#include "project/ProjectFile.h"
#include "train/Trainer.h"

namespace strata::gpu_check {

RunConfig example(const std::string& name, const Device& device, int64_t steps) {
  RunConfig c = load_project(std::string(STRATA_SOURCE_DIR) + "/resources/examples/" + name + ".strata");
  c.training.epochs = 1;
  c.training.max_steps_per_epoch = steps;
  c.strategy.name = "one_device";
  c.strategy.devices = {device.str()};
  return c;
}

RunConfig example_compared(const std::string& name, const Device& device, int64_t steps) {
  RunConfig c = example(name, device, steps);
  c.dataset.validation_split = 0.01;
  return c;
}

RunConfig example_mlp(const Device& device, int64_t steps, const std::string& optimizer) {
  RunConfig c = example("fashion-mlp", device, steps);
  c.training.optimizer.type = optimizer;
  // SGD makes the weight change proportional to the gradient, so a
  // difference in the last bits stays a difference in the last bits (Adam's
  // m / sqrt(v) turns a near-zero gradient's rounding into a full step).
  if (optimizer == "sgd") c.training.optimizer.learning_rate = 0.05f;
  return c;
}

RunConfig example_for_speed(const std::string& name, const Device& device, int64_t steps) {
  return name == "fashion-mlp" ? example_mlp(device, steps, "adam") : example(name, device, steps);
}

std::string nccl_missing(const Device& device, int replicas) {
  if (device.kind != DeviceKind::Gpu) return device.str() + " is not a GPU";
  try {
    select_cross_device_ops(std::vector<Device>(static_cast<size_t>(replicas), device), "nccl");
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

double median_of(std::vector<double>& v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void Collector::emit(const Event& e) {
  if (auto* s = std::get_if<StepEvent>(&e)) {
    losses.push_back(s->loss);
    step_times.push_back(s->time);
    epochs.push_back(s->epoch);
    epoch_steps.push_back(s->epoch_step);
  }
  if (auto* ep = std::get_if<EpochEvent>(&e)) last_epoch = *ep;
  if (auto* log = std::get_if<LogEvent>(&e); log && log->message.find("captured as a graph") != std::string::npos)
    captured = true;
}

Run train(const RunConfig& config, std::vector<trace::Span>* spans) {
  Run r;
  RunConfig c = config;
  if (spans) c.trace.enabled = true;
  Trainer trainer(c, r.events);
  trainer.prepare();
  std::mutex mutex;
  if (spans)
    trainer.set_span_listener([&](const std::vector<trace::Span>& s) {
      std::lock_guard lock(mutex);
      spans->insert(spans->end(), s.begin(), s.end());
    });
  const FinishedEvent fin = trainer.run();
  if (fin.status != RunStatus::Completed)
    throw runtime_error("the run on " + c.strategy.devices.front() + " " + status_name(fin.status) + ": " + fin.message);
  for (Variable* v : trainer.model().variables()) {
    std::vector<std::vector<float>> parts;
    for (int i = 0; i < v->num_components(); ++i) parts.push_back(v->component(i).values());
    r.weights.push_back(std::move(parts));
  }
  for (const auto& layer : trainer.model().layers()) r.host_state += layer->extra_state().dump() + ";";
  r.host_state += "iterations=" + std::to_string(trainer.optimizer().iterations());
  return r;
}

CheckRecord compare(const std::string& op, const std::string& shape, const std::vector<float>& got,
                    const std::vector<float>& want, double tolerance) {
  const Comparison c = compare_floats(got, want, tolerance);
  return CheckRecord{op, shape, c.max_error, tolerance, c.passed, c.detail};
}

void compare_weights(std::vector<CheckRecord>& out, const std::string& op, const Run& got, int c, const Run& want,
                     double tolerance) {
  for (size_t v = 0; v < want.weights.size(); ++v)
    out.push_back(compare(op, "variable " + std::to_string(v) + (c > 0 ? " replica " + std::to_string(c) : ""),
                          got.weights[v][static_cast<size_t>(c)], want.weights[v][0], tolerance));
}

std::vector<float> as_floats(const std::vector<double>& v) { return {v.begin(), v.end()}; }

}  // namespace strata::gpu_check
