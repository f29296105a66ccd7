// What the step timeline costs the training thread, measured directly
// (whole-run throughput on a shared machine is too noisy to resolve 1%):
// per step, `replicas` threads record the spans a mirrored step records
// (step, forward, backward, collective wait, reduce-scatter, optimizer,
// collective wait, all-gather) and the run lane a data wait; the training
// thread then flushes: drain, the per-step breakdown and its step_spans
// event, and (twenty times a second of the run's clock) the hand-over to the
// trace file's thread. The run's clock advances `--step-us` a step (default
// 100, a short GPU step). Prints microseconds per step for the recording
// (per replica thread) and for the flush, the longest flush (a stall of the
// training thread, which a GPU one step behind it would wait out), and the
// trace file's bytes per 1,000 steps.
//
//   bench_trace [--steps N] [--replicas N] [--step-us N] [--no-file: without the trace file]
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/StepTracer.h"

namespace {
using Clock = std::chrono::steady_clock;
double since_us(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }
}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 20000;
  int replicas = 2;
  bool with_file = true;
  double step_us = 100;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-file") with_file = false;
    else if (a == "--steps" && i + 1 < argc) steps = std::stoll(argv[++i]);
    else if (a == "--replicas" && i + 1 < argc) replicas = std::stoi(argv[++i]);
    else if (a == "--step-us" && i + 1 < argc) step_us = std::stod(argv[++i]);
  }
  using namespace strata;
  using trace::SpanKind;
  const std::string file = (std::filesystem::temp_directory_path() / "bench_trace.json").string();
  NullSink sink;
  StepTracer tracer(trace::TraceMetadata{"bench", 0, "host", 0}, sink);
  if (with_file) tracer.open_file(file);
  trace::TraceRecorder* rec = tracer.recorder();
  const SpanKind kinds[] = {SpanKind::Forward,        SpanKind::Backward,  SpanKind::CollectiveWait, SpanKind::ReduceScatter,
                            SpanKind::CollectiveWait, SpanKind::AllGather, SpanKind::Optimizer};
  double flush_us = 0, longest_flush_us = 0;
  std::vector<double> record_us(static_cast<size_t>(replicas), 0.0);
  // Long-lived replica threads, as the strategy's: each step they record,
  // then the training thread flushes while they wait for the next step.
  std::barrier start(replicas + 1), done(replicas + 1);
  int64_t step = 0;
  std::vector<std::thread> threads;
  for (int r = 0; r < replicas; ++r)
    threads.emplace_back([&, r] {
      const trace::Lane lane{trace::LaneKind::Replica, r};
      for (;;) {
        start.arrive_and_wait();
        if (step > steps) return;
        const auto t0 = Clock::now();
        {
          const trace::ScopedSpan frame(rec, SpanKind::Step, lane, step);
          for (SpanKind k : kinds) trace::ScopedSpan(rec, k, lane, step, k == SpanKind::ReduceScatter ? 1 << 20 : 0);
        }
        record_us[static_cast<size_t>(r)] += since_us(t0);
        done.arrive_and_wait();
      }
    });
  for (step = 1; step <= steps; ++step) {
    start.arrive_and_wait();
    done.arrive_and_wait();
    { const trace::ScopedSpan wait(rec, SpanKind::DataWait, trace::Lane{trace::LaneKind::Run, 0}, step); }
    const auto t0 = Clock::now();
    tracer.flush(static_cast<double>(step) * step_us * 1e-6, step);
    const double took = since_us(t0);
    flush_us += took;
    longest_flush_us = std::max(longest_flush_us, took);
  }
  start.arrive_and_wait();  // step > steps: the threads end
  for (auto& t : threads) t.join();
  double record_total = 0;
  for (double r : record_us) record_total += r / replicas;
  tracer.close(0);
  const auto bytes = with_file ? std::filesystem::file_size(file) : 0;
  if (with_file) std::filesystem::remove(file);
  nlohmann::json j = {{"bench", "trace"},
                      {"steps", steps},
                      {"replicas", replicas},
                      {"spans_per_step", replicas * 8 + 1},
                      {"record_us_per_step_per_replica", record_total / static_cast<double>(steps)},
                      {"step_us", step_us},
                      {"flush_us_per_step", flush_us / static_cast<double>(steps)},
                      {"longest_flush_us", longest_flush_us},
                      {"file_bytes_per_1000_steps", static_cast<double>(bytes) * 1000.0 / static_cast<double>(steps)}};
  std::cout << j.dump() << std::endl;
  return 0;
}
