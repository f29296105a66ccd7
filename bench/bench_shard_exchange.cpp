// What moving the sharded update's shards between two cores costs per step,
// apart from everything else a training step does. Two threads play two host
// replicas of the MLP's parameters (235,146 floats by default), with the
// engine's own kernels, in three layouts:
//
//   one_copy   what mirrored does on host replicas under the sharded update:
//              one copy of the weights that both read whole (as a forward
//              pass does), each replica's gradient read by the other for its
//              shard (the reduce-scatter), each shard updated by its owner
//              with WeightStores::Streamed (the engine's choice) or Cached
//   private    the same reads, writes and arithmetic on memory no other core
//              touches: the cost of a replica's share without the exchange
//   one_thread one replica doing the whole update, nothing to reduce
//              (one_device's figure)
//
// Each step, per thread: read_weights (all of them), write_gradients (all of
// this replica's), reduce_scatter (this replica's shard of both gradients,
// summed), update (Adam on this replica's shard). Prints one JSON line per
// layout with the median microseconds per step of each phase (the slower of
// the two threads), and the exchange's cost: one_copy's total less private's.
//
//   bench_shard_exchange                    # the MLP's parameter count
//   bench_shard_exchange --params 2M --steps 500
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "BenchUtil.h"
#include "backend/cpu/CpuBackend.h"
#include "core/Denormals.h"
#include "distribute/collectives/Barrier.h"
#include "distribute/collectives/ChunkSum.h"

namespace {

using Clock = std::chrono::steady_clock;
using strata::bench::median;

volatile float g_sink = 0;  // keeps the weights' read from being optimised away

enum Phase { ReadWeights, WriteGradients, ReduceScatter, Update, kPhases };
const char* kPhaseNames[kPhases] = {"read_weights", "write_gradients", "reduce_scatter", "update"};

struct Layout {
  std::string name;
  bool shared;  // one copy of the weights and gradients read across the cores
  strata::WeightStores stores;
  int threads;
};

// Times each phase of `steps` steps on `threads` threads; returns, per phase,
// the median over the steps of the slower thread's time.
std::vector<double> run(const Layout& layout, size_t params, int steps) {
  const int n = layout.threads;
  const size_t shard = (params + static_cast<size_t>(n) - 1) / static_cast<size_t>(n);
  // Private: each replica's weights are its own array, in memory no other core reads.
  std::vector<std::vector<float>> weights(layout.shared ? 1 : static_cast<size_t>(n), std::vector<float>(params, 0.01f));
  std::vector<std::vector<float>> grads(static_cast<size_t>(n), std::vector<float>(params, 0.0f));
  std::vector<std::vector<float>> m(static_cast<size_t>(n), std::vector<float>(shard, 0.0f)), v = m;
  std::vector<std::vector<std::vector<double>>> times(
      static_cast<size_t>(n), std::vector<std::vector<double>>(kPhases, std::vector<double>(static_cast<size_t>(steps))));
  strata::Barrier barrier(n);
  auto replica = [&](int r) {
    strata::enable_flush_denormals();
    strata::CpuBackend backend(1, r);
    const auto ri = static_cast<size_t>(r);
    float* w = weights[layout.shared ? 0 : ri].data();
    const size_t lo = std::min(params, shard * ri), hi = std::min(params, lo + shard);
    const float lr_step[2] = {1e-3f, 1.0f};
    float* g = grads[ri].data();
    // The reduce-scatter's terms: every replica's gradient, or (private) this
    // replica's twice, the same reads and adds all on this core's memory.
    std::vector<float*> terms{g, g};
    if (layout.shared) {
      terms.clear();
      for (auto& other : grads) terms.push_back(other.data());
    }
    for (int s = 0; s < steps; ++s) {
      const auto si = static_cast<size_t>(s);
      barrier.arrive_and_wait();
      auto t0 = Clock::now();
      auto lap = [&](Phase p) {
        const auto t1 = Clock::now();
        times[ri][p][si] = std::chrono::duration<double, std::micro>(t1 - t0).count();
        t0 = t1;
      };
      // Sixteen running sums: one vector register, read at memory speed.
      float part[16] = {};
      size_t i = 0;
      for (; i + 16 <= params; i += 16)
        for (size_t k = 0; k < 16; ++k) part[k] += w[i + k];
      for (; i < params; ++i) part[0] += w[i];
      g_sink = std::accumulate(std::begin(part), std::end(part), 0.0f);
      lap(ReadWeights);
      const float value = 1e-3f * static_cast<float>(s % 7 + r + 1);
      std::fill(g, g + params, value);
      lap(WriteGradients);
      barrier.arrive_and_wait();  // every gradient written
      t0 = Clock::now();
      if (n > 1) strata::sum_buffers(terms, lo, hi, g);  // one replica (one_device) has nothing to reduce
      lap(ReduceScatter);
      backend.adam_update(static_cast<int64_t>(hi - lo), w + lo, g + lo, m[ri].data(), v[ri].data(),
                          strata::AdamParams{0.9f, 0.999f, 1e-7f}, lr_step, layout.stores);
      lap(Update);
      barrier.arrive_and_wait();  // every shard updated before the next step reads the weights
    }
  };
  std::vector<std::thread> others;
  for (int r = 1; r < n; ++r) others.emplace_back(replica, r);
  replica(0);
  for (auto& t : others) t.join();
  std::vector<double> out(kPhases);
  for (int p = 0; p < kPhases; ++p) {
    std::vector<double> slowest(static_cast<size_t>(steps), 0.0);
    for (int s = 0; s < steps; ++s)
      for (int r = 0; r < n; ++r)
        slowest[static_cast<size_t>(s)] = std::max(slowest[static_cast<size_t>(s)],
                                                   times[static_cast<size_t>(r)][p][static_cast<size_t>(s)]);
    out[static_cast<size_t>(p)] = median(slowest);
  }
  return out;
}

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout, "usage: bench_shard_exchange [--params N (K/M suffixes)] [--steps N] [--reps N]\n");
  std::exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  size_t params = 235146;
  int steps = 2000, reps = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    try {
      if (a == "--params") params = strata::bench::parse_decimal(value());
      else if (a == "--steps") steps = std::stoi(value());
      else if (a == "--reps") reps = std::stoi(value());
      else if (a == "-h" || a == "--help") usage(0);
      else usage(2);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_shard_exchange: %s: %s\n", a.c_str(), e.what());
      usage(2);
    }
  }
  if (params < 2 || steps < 1 || reps < 1) usage(2);
  const std::vector<Layout> layouts = {
      {"one_copy_streamed", true, strata::WeightStores::Streamed, 2},
      {"one_copy_cached", true, strata::WeightStores::Cached, 2},
      {"private", false, strata::WeightStores::Cached, 2},
      {"one_thread", false, strata::WeightStores::Cached, 1},
  };
  // Repetitions interleaved, as in bench_train; each figure is the median over them.
  std::vector<std::vector<std::vector<double>>> figures(layouts.size());
  for (int rep = 0; rep < reps; ++rep)
    for (size_t l = 0; l < layouts.size(); ++l) figures[l].push_back(run(layouts[l], params, steps));
  std::vector<double> totals(layouts.size());
  for (size_t l = 0; l < layouts.size(); ++l) {
    nlohmann::json line{{"bench", "shard_exchange"},
                        {"layout", layouts[l].name},
                        {"params", params},
                        {"replicas", layouts[l].threads},
                        {"steps", steps},
                        {"reps", reps}};
    double total = 0;
    for (int p = 0; p < kPhases; ++p) {
      std::vector<double> per_rep;
      for (auto& f : figures[l]) per_rep.push_back(f[static_cast<size_t>(p)]);
      const double us = median(per_rep);
      line[std::string(kPhaseNames[p]) + "_us"] = us;
      total += us;
    }
    line["total_us"] = total;
    totals[l] = total;
    std::cout << line.dump() << "\n";
  }
  // What moving the shards between the cores adds to each step, over the
  // same work on memory each core keeps to itself.
  std::cout << nlohmann::json{{"bench", "shard_exchange"},
                              {"summary", true},
                              {"params", params},
                              {"exchange_us_streamed", totals[0] - totals[2]},
                              {"exchange_us_cached", totals[1] - totals[2]}}
                   .dump()
            << "\n";
}
