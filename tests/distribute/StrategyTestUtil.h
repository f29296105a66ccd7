#pragma once
// Shared helpers for the strategy tests: a deterministic model, data and a
// custom training step written on the public strategy API.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "data/Synthetic.h"
#include "distribute/Strategies.h"
#include "nn/Dense.h"
#include "nn/GradientTape.h"
#include "nn/Loss.h"
#include "nn/Optimizer.h"
#include "nn/Sequential.h"
#include "core/Rng.h"

namespace strata::test {

// A host copy of a tensor on any device (never shares its buffer).
inline Tensor host_copy(const Tensor& t) { return t.on_host() ? t.clone() : t.to(Device{}); }

struct Setup {
  std::unique_ptr<nn::Sequential> model;
  std::unique_ptr<nn::Optimizer> optimizer;
};

// The same initial weights for every strategy: the global seed fixes each
// layer's initializer seed.
inline Setup make_setup(Strategy& strategy, const std::string& optimizer) {
  set_global_seed(1234);
  auto scope = strategy.scope();
  Setup s;
  s.model = std::make_unique<nn::Sequential>(nn::Sequential{nn::Dense(16, Activation::Tanh), nn::Dense(8, Activation::Relu), nn::Dense(3)});
  s.model->build(Shape{5});
  if (optimizer == "adam") s.optimizer = std::make_unique<nn::Adam>(0.01f);
  else s.optimizer = std::make_unique<nn::SGD>(0.1f, 0.9f, true);
  return s;
}

// Trains `steps` steps (cycling epochs) and returns replica 0's weights.
// With `overlap`, gradients are reduced while the backward pass runs (the
// Trainer's form), else after it (Keras' apply_gradients).
inline std::vector<Tensor> train(Strategy& strategy, Setup& s, const Dataset& data, int64_t global_batch, int steps,
                                 bool check_identical, bool* identical, bool overlap = false) {
  nn::SparseCategoricalCrossentropy loss_object(true, nn::Reduction::None);
  PipelineOptions po;
  po.batch_size = global_batch;
  po.seed = 99;
  auto pipeline = std::make_shared<BatchPipeline>(std::make_shared<const Dataset>(data), po);
  DistributedDataset dist = strategy.distribute(pipeline);
  auto vars = s.model->trainable_variables();
  int done = 0;
  int64_t epoch = 0;
  if (identical) *identical = true;
  while (done < steps) {
    dist.begin_epoch(epoch++);
    while (done < steps) {
      auto inputs = dist.next();
      if (!inputs) break;
      strategy.run(
          [&](ReplicaContext& ctx, const Batch& in) {
            GradientTape tape;
            Tensor logits = (*s.model)(in.features, true, tape);
            Tensor loss = nn::compute_average_loss(loss_object(in.labels, logits), in.global_batch_size);
            if (!overlap) {
              s.optimizer->apply_gradients(ctx, tape.gradient(loss, vars), vars);
              return loss;
            }
            GradientTape::Ready ready;
            if (ctx.overlaps_backward()) ready = [&ctx](size_t i, const Tensor& g) { ctx.gradient_ready(i, g); };
            std::vector<Tensor> grads = tape.gradient(loss, vars, ready);
            ctx.finish_gradients(grads);
            s.optimizer->apply_summed_gradients(ctx, grads, vars);
            return loss;
          },
          *inputs);
      ++done;
      if (check_identical && identical)
        for (auto* v : vars)
          for (int r = 1; r < v->num_components(); ++r)
            if (v->component(0).values() != v->component(r).values()) *identical = false;
    }
  }
  std::vector<Tensor> out;
  for (auto* v : vars) out.push_back(host_copy(v->component(0)));
  return out;
}

// Largest relative difference of any weight tensor, ||a - b|| / ||a||: the
// float32 summation order differs between one device and N partial sums, so
// element-wise equality is not expected, only agreement to rounding.
inline double max_relative_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double diff = 0, norm = 0;
    for (int64_t k = 0; k < a[i].numel(); ++k) {
      const double x = a[i].data()[k], y = b[i].data()[k];
      diff += (x - y) * (x - y);
      norm += x * x;
    }
    worst = std::max(worst, std::sqrt(diff) / std::max(1e-12, std::sqrt(norm)));
  }
  return worst;
}

inline std::vector<Device> cpus(int n) {
  std::vector<Device> d;
  for (int i = 0; i < n; ++i) d.push_back(Device{DeviceKind::Cpu, i});
  return d;
}

// The kind of replica device under test: cpu, or the strict simulated
// accelerator when STRATA_TEST_DEVICES=sim (CTest runs these tests both ways,
// as NAME and NAME_sim). References (OneDevice) stay on the cpu.
inline DeviceKind test_device_kind() {
  const char* env = std::getenv("STRATA_TEST_DEVICES");
  return env && std::string(env) == "sim" ? DeviceKind::Sim : DeviceKind::Cpu;
}
inline bool testing_sim() { return test_device_kind() == DeviceKind::Sim; }

inline std::vector<Device> devices(int n) {
  std::vector<Device> d;
  for (int i = 0; i < n; ++i) d.push_back(Device{test_device_kind(), i});
  return d;
}

}  // namespace strata::test
