// In-process all-reduce bandwidth, nccl-tests style: for each replica count,
// cross-device op and buffer size, one checked run (every element of every
// replica compared with the exact sum) followed by timed iterations; prints
// algbw = bytes / time and busbw = algbw * 2(n-1)/n, which is comparable
// across replica counts and with a link's (here: memory's) bandwidth.
// Also measures this machine's single-thread memcpy bandwidth for reference,
// and a vectorized single-thread y = a + b (what one core can do for the
// reduce step).
//
// The collective runs through the public strategy API: a MirroredStrategy
// over cpu:0..cpu:N-1 with the op chosen by name, and ReplicaContext::
// all_reduce on one tensor per replica. The fusion bucket is set to 4 bytes so
// the tensor is reduced in place (no packing copy): this measures the
// collective itself. --fusion measures the packing path instead.
//
//   bench_allreduce                         # 1 MB and 25 MB, 2/3/4 replicas, both ops, plus a sweep
//   bench_allreduce --sizes 1M,25M --replicas 2 --ops in_process --reps 5
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "BenchUtil.h"
#include "distribute/ReplicaContext.h"
#include "distribute/Strategies.h"

namespace {

using namespace strata::bench;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<size_t> sizes;  // bytes
  std::vector<int> replicas{2, 3, 4};
  std::vector<std::string> ops{"in_process", "reduce_to_one_device"};
  int reps = 5;
  double min_seconds = 0.2;  // timed time per repetition, at least
  bool fusion = false;
  bool memcpy_only = false;
};

// The exact value replica r holds at element i before the reduction; small
// integers, so every partial sum is exact in float whatever the order.
inline float pattern(int r, size_t i) { return static_cast<float>(static_cast<int>((i * 7 + static_cast<size_t>(r) * 13) % 31) - 15); }

// One repetition: a checked run, then timed iterations. Returns seconds per
// all-reduce; throws on a wrong result.
double run_one(strata::Strategy& strategy, size_t bytes, double min_seconds, int64_t* iterations) {
  const int n = strategy.num_replicas_in_sync();
  const size_t len = bytes / sizeof(float);
  std::vector<strata::Tensor> bufs(static_cast<size_t>(n));
  std::vector<int64_t> errors(static_cast<size_t>(n), 0);
  double per_iter = 0;
  int64_t iters_done = 0;
  std::atomic<bool> more{true};
  strategy.run_replicas([&](strata::ReplicaContext& ctx) {
    const int r = ctx.replica_id_in_sync_group();
    // Each replica allocates and first-touches its own buffer.
    strata::Tensor& t = bufs[static_cast<size_t>(r)];
    t = strata::Tensor::empty(strata::Shape{static_cast<int64_t>(len)});
    std::vector<strata::Tensor> one{t};
    auto fill = [&] {
      float* p = t.data();
      for (size_t i = 0; i < len; ++i) p[i] = pattern(r, i);
    };
    // Checked run.
    fill();
    ctx.all_reduce(strata::ReduceOp::Sum, one);
    int64_t bad = 0;
    const float* p = t.data();
    for (size_t i = 0; i < len; ++i) {
      float want = 0;
      for (int q = 0; q < n; ++q) want += pattern(q, i);
      if (p[i] != want) ++bad;
    }
    errors[static_cast<size_t>(r)] = bad;
    // Timed iterations. The values grow by a factor n per iteration; refill
    // (untimed) every few iterations so they stay far from overflow.
    fill();
    ctx.all_reduce(strata::ReduceOp::Sum, one);  // warm-up
    const int64_t batch = 16;
    double timed = 0;
    int64_t iters = 0;
    for (;;) {
      fill();
      ctx.barrier();
      const auto t0 = Clock::now();
      for (int64_t k = 0; k < batch; ++k) ctx.all_reduce(strata::ReduceOp::Sum, one);
      ctx.barrier();
      timed += std::chrono::duration<double>(Clock::now() - t0).count();
      iters += batch;
      // Every replica must take the same decision: replica 0's. It cannot
      // overwrite the flag before the others read it: that needs the next
      // iteration's first barrier.
      if (r == 0) more.store(timed < min_seconds);
      ctx.barrier();
      if (!more.load()) break;
    }
    if (r == 0) {
      per_iter = timed / static_cast<double>(iters);
      iters_done = iters;
    }
  });
  int64_t bad = 0;
  for (auto e : errors) bad += e;
  if (bad) throw std::runtime_error("all-reduce gave " + std::to_string(bad) + " wrong elements");
  *iterations = iters_done;
  return per_iter;
}

// Single-thread memcpy of `bytes` between two buffers: GB/s of bytes copied.
double memcpy_gbps(size_t bytes, double min_seconds) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  std::memcpy(dst.data(), src.data(), bytes);
  double timed = 0;
  int64_t iters = 0;
  while (timed < min_seconds) {
    const auto t0 = Clock::now();
    for (int k = 0; k < 8; ++k) {
      std::memcpy(dst.data(), src.data(), bytes);
      src[static_cast<size_t>(k)] = dst[bytes - 1 - static_cast<size_t>(k)];  // keep the copies observable
    }
    timed += std::chrono::duration<double>(Clock::now() - t0).count();
    iters += 8;
  }
  if (dst[bytes / 2] != 1) throw std::runtime_error("memcpy check failed");
  return static_cast<double>(bytes) * static_cast<double>(iters) / timed / 1e9;
}

// Single-thread y = a + b over `bytes` per buffer, vectorized (restrict
// pointers): what one core can do for the reduce step of an all-reduce of two
// buffers. GB/s of one buffer's bytes per second, the unit of algbw.
double add_gbps(size_t bytes, double min_seconds) {
  const size_t len = bytes / sizeof(float);
  std::vector<float> a(len, 1.0f), b(len, 2.0f), y(len, 0.0f);
  auto add = [len](const float* __restrict pa, const float* __restrict pb, float* __restrict py) {
    for (size_t i = 0; i < len; ++i) py[i] = pa[i] + pb[i];
  };
  add(a.data(), b.data(), y.data());
  double timed = 0;
  int64_t iters = 0;
  while (timed < min_seconds) {
    const auto t0 = Clock::now();
    for (int k = 0; k < 8; ++k) {
      add(a.data(), b.data(), y.data());
      asm volatile("" : : "r"(y.data()) : "memory");  // every pass really runs
    }
    timed += std::chrono::duration<double>(Clock::now() - t0).count();
    iters += 8;
  }
  if (y[len / 2] != 3.0f) throw std::runtime_error("add check failed");
  return static_cast<double>(bytes) * static_cast<double>(iters) / timed / 1e9;
}

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: bench_allreduce [--sizes LIST] [--replicas LIST] [--ops LIST] [--reps N] [--min-seconds S]\n"
               "                       [--fusion] [--memcpy-only]\n"
               "  LIST is comma-separated; sizes take K/M/G suffixes (decimal), e.g. 1M,25M.\n"
               "  Default: sizes 1M,25M plus a sweep 64K..64M, replicas 2,3,4, both ops.\n");
  std::exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool sizes_given = false;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) usage(2);
        return argv[++i];
      };
      if (a == "--sizes") { o.sizes = parse_list<size_t>(value(), [](const std::string& v) { return parse_decimal(v, "B"); }); sizes_given = true; }
      else if (a == "--replicas") o.replicas = parse_list<int>(value(), [](const std::string& s) { return std::stoi(s); });
      else if (a == "--ops") o.ops = parse_list<std::string>(value(), [](const std::string& s) { return s; });
      else if (a == "--reps") o.reps = std::stoi(value());
      else if (a == "--min-seconds") o.min_seconds = std::stod(value());
      else if (a == "--fusion") o.fusion = true;
      else if (a == "--memcpy-only") o.memcpy_only = true;
      else if (a == "-h" || a == "--help") usage(0);
      else usage(2);
    }
  } catch (const std::exception&) {
    usage(2);
  }
  if (!sizes_given) o.sizes = {65536, 262144, 1000000, 4000000, 16000000, 25000000, 64000000};

  // memcpy reference first, at the sizes that matter for the table.
  for (size_t bytes : {size_t{1000000}, size_t{25000000}}) {
    std::vector<double> v;
    for (int rep = 0; rep < o.reps; ++rep) v.push_back(memcpy_gbps(bytes, o.min_seconds));
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    std::cout << nlohmann::json{{"bench", "memcpy"}, {"threads", 1},      {"bytes", bytes},
                                {"median_gbps", median(v)}, {"min_gbps", *lo}, {"max_gbps", *hi}, {"reps", o.reps}}
                     .dump()
              << std::endl;
  }
  for (size_t bytes : {size_t{1000000}, size_t{25000000}}) {
    std::vector<double> v;
    for (int rep = 0; rep < o.reps; ++rep) v.push_back(add_gbps(bytes, o.min_seconds));
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    std::cout << nlohmann::json{{"bench", "add_reference"}, {"threads", 1},      {"bytes", bytes},
                                {"median_gbps", median(v)}, {"min_gbps", *lo}, {"max_gbps", *hi}, {"reps", o.reps}}
                     .dump()
              << std::endl;
  }
  if (o.memcpy_only) return 0;

  try {
    for (int n : o.replicas) {
      for (const std::string& op : o.ops) {
        strata::StrategyOptions so;
        for (int r = 0; r < n; ++r) so.devices.push_back(strata::Device{strata::DeviceKind::Cpu, r});
        so.threads = n;  // one thread per replica: the collective runs on the replica threads
        so.cross_device_ops = op;
        so.fusion_bytes = o.fusion ? (4u << 20) : 4;
        strata::MirroredStrategy strategy(so.devices, so);
        for (size_t bytes : o.sizes) {
          std::vector<double> algbw;
          int64_t iters = 0;
          for (int rep = 0; rep < o.reps; ++rep) {
            const double sec = run_one(strategy, bytes, o.min_seconds, &iters);
            algbw.push_back(static_cast<double>(bytes) / sec / 1e9);
          }
          const double factor = 2.0 * (n - 1) / n;
          const double med = median(algbw);
          const auto [lo, hi] = std::minmax_element(algbw.begin(), algbw.end());
          std::cout << nlohmann::json{{"bench", "allreduce"},
                                      {"op", strategy.cross_device_ops().name()},
                                      {"replicas", n},
                                      {"bytes", bytes},
                                      {"floats", bytes / sizeof(float)},
                                      {"fusion", o.fusion},
                                      {"check", "ok"},
                                      {"reps", o.reps},
                                      {"iters_per_rep", iters},
                                      {"time_us", bytes / (med * 1e9) * 1e6},
                                      {"algbw_gbps", med},
                                      {"busbw_gbps", med * factor},
                                      {"algbw_min", *lo},
                                      {"algbw_max", *hi}}
                           .dump()
                    << std::endl;
        }
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_allreduce: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
