// Parameter-server update throughput, in one process: W worker threads
// (replicas of a ParameterServerStrategy) each pull the weights and push an
// Adam gradient for the Fashion-MNIST MLP (784-256-128-10, 235,146 floats) as
// fast as they can, against P servers (variables split so every server holds
// a share). Prints one JSON line per (servers, workers): pushes/s (each push
// is one update on every server), per-server updates/s, gradient GB/s applied
// and the pull+push round trip. A check first: one push of a known gradient
// with SGD moves every weight by exactly -lr * g.
//
//   bench_parameter_server                    # servers 1,2,4 x workers 1,2
//   bench_parameter_server --servers 2 --workers 2 --seconds 1
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "BenchUtil.h"
#include "distribute/parameter_server/ParameterServerStrategy.h"
#include "nn/Dense.h"
#include "nn/Sequential.h"

namespace {

using namespace strata::bench;
using Clock = std::chrono::steady_clock;

struct Built {
  std::unique_ptr<strata::ParameterServerStrategy> strategy;
  std::unique_ptr<strata::nn::Sequential> model;
  std::vector<strata::Variable*> vars;
};

Built build(int servers, int workers, strata::nn::Optimizer& optimizer) {
  strata::StrategyOptions o;
  for (int w = 0; w < workers; ++w) o.devices.push_back(strata::Device{strata::DeviceKind::Cpu, w});
  o.threads = workers;
  o.parameter_server.servers = servers;
  o.parameter_server.min_shard_bytes = 64 << 10;
  Built b;
  b.strategy = std::make_unique<strata::ParameterServerStrategy>(o.devices, o);
  {
    auto scope = b.strategy->scope();
    b.model = std::make_unique<strata::nn::Sequential>();
    b.model->add(strata::nn::Dense(256, strata::Activation::Relu));
    b.model->add(strata::nn::Dense(128, strata::Activation::Relu));
    b.model->add(strata::nn::Dense(10));
    b.model->build(strata::Shape{784});
  }
  b.vars = b.model->trainable_variables();
  b.strategy->place(b.vars, optimizer);
  return b;
}

std::vector<strata::Tensor> gradients(const std::vector<strata::Variable*>& vars, float value) {
  std::vector<strata::Tensor> g;
  for (auto* v : vars) g.push_back(strata::Tensor::full(v->shape(), value));
  return g;
}

// SGD, lr 0.5, gradient 0.25 everywhere: every master weight must move by
// exactly -0.125 after one push, whatever the sharding.
void check(int servers) {
  strata::nn::SGD sgd(0.5f);
  Built b = build(servers, 1, sgd);
  std::vector<std::vector<float>> before;
  for (auto* v : b.strategy->store().masters()) before.emplace_back(v->component(0).data(), v->component(0).data() + v->component(0).numel());
  auto pulled = b.strategy->store().pull(0, 1);
  b.strategy->store().push(gradients(b.vars, 0.25f), pulled, strata::PushRecord{});
  int64_t bad = 0;
  auto masters = b.strategy->store().masters();
  for (size_t i = 0; i < masters.size(); ++i)
    for (int64_t k = 0; k < masters[i]->component(0).numel(); ++k)
      bad += masters[i]->component(0).data()[k] != before[i][static_cast<size_t>(k)] - 0.125f;
  if (bad) throw std::runtime_error("parameter server check: " + std::to_string(bad) + " weights wrong");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> servers{1, 2, 4}, workers{1, 2};
  double seconds = 0.5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : throw std::invalid_argument(a + " needs a value"); };
    if (a == "--servers") servers = parse_list<int>(value(), [](const std::string& v) { return std::stoi(v); });
    else if (a == "--workers") workers = parse_list<int>(value(), [](const std::string& v) { return std::stoi(v); });
    else if (a == "--seconds") seconds = std::stod(value());
    else {
      std::cerr << "usage: bench_parameter_server [--servers 1,2,4] [--workers 1,2] [--seconds S]\n";
      return 2;
    }
  }
  try {
    for (int p : servers) {
      check(p);
      for (int w : workers) {
        strata::nn::Adam adam;
        Built b = build(p, w, adam);
        auto& store = b.strategy->store();
        const auto grads = gradients(b.vars, 1e-3f);
        std::vector<int64_t> pushes(static_cast<size_t>(w), 0);
        const auto t0 = Clock::now();
        b.strategy->run_replicas([&](strata::ReplicaContext& ctx) {
          const int me = ctx.local_replica_id();
          int64_t n = 0;
          while (std::chrono::duration<double>(Clock::now() - t0).count() < seconds) {
            auto pulled = store.pull(me, n + 1);
            store.push(grads, pulled, strata::PushRecord{});
            ++n;
          }
          pushes[static_cast<size_t>(me)] = n;
        });
        const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
        int64_t total = 0;
        for (auto n : pushes) total += n;
        int64_t floats = 0;
        for (auto* v : b.vars) floats += v->shape().numel();
        nlohmann::json j{{"bench", "parameter_server_updates"},
                         {"servers", p},
                         {"workers", w},
                         {"params", floats},
                         {"pushes_per_sec", static_cast<double>(total) / elapsed},
                         {"updates_per_sec_per_server", static_cast<double>(total) / elapsed},
                         {"gradient_gb_per_sec", static_cast<double>(total) * static_cast<double>(floats) * 4 / elapsed / 1e9},
                         {"round_trip_ms", 1e3 * elapsed * w / static_cast<double>(std::max<int64_t>(1, total))},
                         {"checked", true}};
        std::cout << j.dump() << std::endl;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_parameter_server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
