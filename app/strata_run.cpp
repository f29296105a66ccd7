// strata-run: the headless runner. Trains a project and reports as text or
// JSON Lines. Exit codes: 0 completed, 1 training failed, 2 bad input,
// 130 stopped by Ctrl-C (after finishing the current step).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "ConsoleReporter.h"
#include "EvaluateCommand.h"
#include "RunOptions.h"
#include "StopSignals.h"
#include "core/Device.h"
#include "core/Error.h"
#include "distribute/Strategy.h"
#include "project/ProjectFile.h"
#include "project/RunDirectory.h"
#include "project/RunSession.h"
#include "trace/ChromeTrace.h"
#include "train/EventJson.h"
#include "train/StepFlushPolicy.h"

using namespace strata;

namespace {

// What ranks other than 0 of a multi-worker run print: warnings and errors
// only, tagged with rank and host (rank 0 reports for everyone).
class RankLogSink final : public EventSink {
public:
  RankLogSink(int rank, std::string host) : rank_(rank), host_(std::move(host)) {}
  void emit(const Event& e) override {
    if (auto* l = std::get_if<LogEvent>(&e); l && l->level != "info")
      std::fprintf(stderr, "strata-run [rank %d %s] %s: %s\n", rank_, host_.c_str(), l->level.c_str(), l->message.c_str());
  }

private:
  int rank_;
  std::string host_;
};

// --events jsonl. A reader following the run live (the dashboard's
// ProcessBridge, through mpirun) gets each event at once, except those of
// every step: they go out once 50 ms have passed (the dashboard draws ~30
// times a second), so a short step does not pay a write, nor does a slow one
// wait for stdio's buffer to fill.
class JsonlPrinter final : public EventSink {
public:
  void emit(const Event& e) override {
    std::fputs((event_to_jsonl(e) + "\n").c_str(), stdout);
    if (flush_.due(e)) std::fflush(stdout);
  }

private:
  StepFlushPolicy flush_{std::chrono::milliseconds(50)};
};

// --list-devices: every device a replica can be placed on, GPUs with their
// capability and, where the driver's NVML is there, their load right now.
void print_devices() {
  for (auto& d : list_devices()) {
    const double gib = static_cast<double>(d.memory_bytes) / (1 << 30);
    const bool gpu = d.device.kind == DeviceKind::Gpu;
    std::printf("%-7s %s, %.1f GiB %s memory", d.device.str().c_str(), d.name.c_str(), gib, gpu ? "device" : "host");
    if (!d.detail.empty()) std::printf(", %s", d.detail.c_str());
    DeviceUsage u;
    if (gpu && gpu_usage(d.device.index, u)) {
      // Each figure NVML gave (a MIG-partitioned GPU has no utilization).
      std::string now;
      auto add = [&](const std::string& figure) { now += (now.empty() ? "" : ", ") + figure; };
      if (u.utilization) add(std::to_string(std::lround(*u.utilization * 100)) + "% busy");
      if (u.memory_used) {
        char used[32];
        std::snprintf(used, sizeof used, "%.1f GiB used", static_cast<double>(*u.memory_used) / (1 << 30));
        add(used);
      }
      std::printf(" (now %s)", now.c_str());
    }
    std::printf("\n");
  }
  std::printf("(logical CPU devices cpu:0..cpu:%d are accepted; replicas beyond the cores share them)\n",
              logical_cpu_device_count() - 1);
  if (const auto gpus = gpu_inventory(); gpus.gpus.empty()) std::printf("no GPU: %s\n", gpus.unavailable.c_str());
}

// Trains the project: resolves the run to resume, runs the session with
// Ctrl-C as a graceful stop, returns the exit code.
int train(const RunOptions& o, const RunConfig& config, StopSignals& signals) {
  if (o.run_notes && o.no_run_dir)
    throw bad_input("--run-name/--tags: name a run folder; they cannot be combined with --no-run-dir");
  if (!o.run_dir.empty() && o.no_run_dir)
    throw bad_input("--run-dir: names the run folder to write; it cannot be combined with --no-run-dir");
  std::string run_dir = o.run_dir, checkpoint;
  if (o.resume) {
    if (o.no_run_dir) throw bad_input("--resume: continues a run folder; it cannot be combined with --no-run-dir");
    std::string resume_run = o.resume_run;
    if (resume_run.empty()) {
      auto runs = RunDirectory::runs_of(o.project_path);
      if (runs.empty()) throw bad_input("--resume: " + o.project_path + " has no previous run to resume");
      resume_run = runs.back();
    }
    run_dir = resume_run;
    checkpoint = CheckpointManager::resolve(resume_run);
  }

  FanOutSink sink;  // the printer joins once this rank's role is known
  RunSession session(config, sink);
  session.prepare();  // all bad input surfaces here, before any output file exists
  Cluster& cluster = session.cluster();
  ConsoleReporter console(stdout);
  JsonlPrinter jsonl;
  RankLogSink rank_log(cluster.rank(), cluster.host());
  sink.add(cluster.rank() != 0   ? static_cast<EventSink*>(&rank_log)
           : o.events == "jsonl" ? static_cast<EventSink*>(&jsonl)
                                 : &console);
  RunFolderOptions folder;
  if (!o.no_run_dir) folder.dir = run_dir.empty() ? RunDirectory::default_for(o.project_path) : run_dir;
  folder.resume_from = checkpoint;
  folder.notes = o.run_notes;
  session.open(folder);
  if (o.events == "text") {
    if (session.directory()) std::printf("run folder: %s\n", session.directory()->path().c_str());
    if (session.resumed())
      std::printf("resuming from %s (step %lld)\n", checkpoint.c_str(),
                  static_cast<long long>(session.resumed()->position.step));
  }

  // From here Ctrl-C (or SIGTERM) is a graceful stop, until the session is gone.
  struct Disarm {
    StopSignals& signals;
    ~Disarm() {
      signals.arm([] {});
    }
  } disarm{signals};
  signals.arm([&session, text = o.events == "text"] {
    session.trainer().request_stop();
    if (text) std::fprintf(stderr, "\ninterrupted: stopping after the current step\n");
  });
  const FinishedEvent fin = session.run();
  if (fin.status == RunStatus::Completed) return 0;
  if (fin.status == RunStatus::Stopped) return 130;
  // A failed worker must not leave the others waiting in a collective.
  if (cluster.size() > 1) cluster.abort(1, fin.message);
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    const RunOptions o = parse_run_options(argc, argv);
    switch (o.command) {
      case RunOptions::Command::Help: print_usage(stdout); return 0;
      case RunOptions::Command::Version: std::printf("strata-run %s\n", STRATA_VERSION); return 0;
      case RunOptions::Command::ListDevices: print_devices(); return 0;
      case RunOptions::Command::MergeTraces:
        trace::merge_chrome_traces(o.merge_inputs, o.merge_output);
        std::printf("merged %zu trace files into %s\n", o.merge_inputs.size(), o.merge_output.c_str());
        return 0;
      case RunOptions::Command::Train: break;
    }
    if (o.project_path.empty()) {
      print_usage(stderr);
      return 2;
    }
    // Before any other thread starts (MPI's, the replicas'): see StopSignals.
    StopSignals signals;
    RunConfig config = load_project(o.project_path);
    o.apply(config);
    if (!o.evaluate.empty()) return evaluate_command(config, o.evaluate, o.events == "jsonl");
    if (!o.export_from.empty()) return export_command(config, o.export_from, o.export_to);
    return train(o, config, signals);
  } catch (const Error& e) {
    std::fprintf(stderr, "strata-run: %s\n", e.what());
    return e.kind() == ErrorKind::BadInput ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata-run: internal error: %s\n", e.what());
    return 1;
  }
}
