// strata-run: the headless runner. Trains a project and reports as text or
// JSON Lines. Exit codes: 0 completed, 1 training failed, 2 bad input,
// 130 stopped by Ctrl-C (after finishing the current step).
#include <atomic>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "ConsoleReporter.h"
#include "EvaluateCommand.h"
#include "core/Device.h"
#include "core/Error.h"
#include "distribute/Strategy.h"
#include "project/ProjectFile.h"
#include "project/RunDirectory.h"
#include "project/RunNotes.h"
#include "project/RunSession.h"
#include "train/EventJson.h"

using namespace strata;

namespace {
std::atomic<bool> g_interrupted{false};

void on_sigint(int) {
  g_interrupted = true;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

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

class JsonlPrinter final : public EventSink {
public:
  void emit(const Event& e) override {
    std::fputs((event_to_jsonl(e) + "\n").c_str(), stdout);
    if (!std::holds_alternative<StepEvent>(e)) std::fflush(stdout);
  }
};

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: strata-run PROJECT.strata [options]\n"
               "       strata-run --list-devices\n\n"
               "options:\n"
               "  --epochs N            train N epochs (overrides the project)\n"
               "  --learning-rate X     the optimizer's learning rate (overrides the project)\n"
               "  --lr-schedule TYPE    constant, step, exponential or cosine (the project's settings for it)\n"
               "  --warmup-epochs X     ramp the learning rate up linearly over X epochs first\n"
               "  --early-stopping M:P  stop when metric M (loss, accuracy, val_loss, val_accuracy) has not\n"
               "                        improved for P epochs\n"
               "  --reduce-lr-on-plateau M:P[:F]  multiply the learning rate by F (0.1) when M has not\n"
               "                        improved for P epochs\n"
               "  --seed N              the seed of initial weights, shuffling and dropout (overrides the project)\n"
               "  --events text|jsonl   text progress (default) or JSON Lines events on stdout\n"
               "  --run-dir DIR         write the run folder here (default: PROJECT.runs/<time>)\n"
               "  --no-run-dir          do not write a run folder\n"
               "  --run-name NAME       name the run (its run.json; the dashboard's history shows it)\n"
               "  --tags A,B            tag the run\n"
               "  --strategy NAME       one_device, mirrored, central_storage, multi_worker_mirrored (under mpirun),\n"
               "                        parameter_server\n"
               "  --servers N           parameter_server: number of parameter servers (1)\n"
               "  --staleness K|inf     parameter_server: steps a worker may run ahead (0 = synchronous; inf = async)\n"
               "  --min-shard-bytes B   parameter_server: split variables into pieces of at least B bytes (0 = whole)\n"
               "  --straggler R[:F]     benchmarks/demos: replica R takes F (2) times as long per step\n"
               "  --fail-worker W@STEP  demos/tests: parameter_server worker W fails at its step STEP\n"
               "  --fail-server S@N     demos/tests: parameter server S fails at its update N (the run fails)\n"
               "  --collective-timeout S  multi-worker: seconds to wait for the other ranks before failing (300)\n"
               "  --devices LIST        replica devices, e.g. cpu:0,cpu:1 or gpu:0,gpu:1 (gpu:0,gpu:0: two\n"
               "                        replicas sharing one GPU)\n"
               "  --threads N           CPU threads in all, divided among replicas (0 = all cores)\n"
               "  --batch-size N        global batch size\n"
               "  --max-steps N         at most N steps per epoch\n"
               "  --no-graphs           run every step op by op (GPU/sim devices otherwise replay each\n"
               "                        step as one captured graph from the second step on)\n"
               "  --resume [RUN]        continue the latest (or the given) run from its latest checkpoint\n"
               "  --evaluate CKPT       test loss, accuracy, per-class accuracy, confusion matrix of a\n"
               "                        checkpoint, run folder or .safetensors file (JSON with --events jsonl)\n"
               "  --export-weights CKPT OUT.safetensors   write a checkpoint's weights as one file\n"
               "  --list-devices        print the devices this machine has and exit\n"
               "  --version             print the version and exit\n\n"
               "exit codes: 0 completed, 1 training failed, 2 bad input, 130 stopped by Ctrl-C\n");
}

// --list-devices: every device a replica can be placed on, GPUs with their
// capability and, where the driver's NVML is there, their load right now.
void print_devices() {
  for (auto& d : list_devices()) {
    const double gib = static_cast<double>(d.memory_bytes) / (1 << 30);
    const bool gpu = d.device.kind == DeviceKind::Gpu;
    std::printf("%-7s %s, %.1f GiB %s memory", d.device.str().c_str(), d.name.c_str(), gib, gpu ? "device" : "host");
    if (!d.detail.empty()) std::printf(", %s", d.detail.c_str());
    DeviceUsage u;
    if (gpu && gpu_usage(d.device.index, u))
      std::printf(" (now %.0f%% busy, %.1f GiB used)", u.utilization * 100,
                  static_cast<double>(u.memory_used) / (1 << 30));
    std::printf("\n");
  }
  std::printf("(logical CPU devices cpu:0..cpu:%d are accepted; replicas beyond the cores share them)\n",
              logical_cpu_device_count() - 1);
  if (const auto gpus = gpu_inventory(); gpus.gpus.empty()) std::printf("no GPU: %s\n", gpus.unavailable.c_str());
}

int to_int(const std::string& flag, const std::string& v) {
  try {
    size_t pos = 0;
    long long n = std::stoll(v, &pos);
    if (pos != v.size()) throw 0;
    return static_cast<int>(n);
  } catch (...) {
    throw bad_input(flag + ": expected an integer, got '" + v + "'");
  }
}
double to_double(const std::string& flag, const std::string& v) {
  try {
    size_t pos = 0;
    const double x = std::stod(v, &pos);
    if (pos != v.size()) throw 0;
    return x;
  } catch (...) {
    throw bad_input(flag + ": expected a number, got '" + v + "'");
  }
}

std::vector<std::string> split(const std::string& v, char sep) {
  std::vector<std::string> parts(1);
  for (char c : v) {
    if (c == sep) parts.emplace_back();
    else parts.back() += c;
  }
  return parts;
}

// "I@N" with I >= 0 and N >= 1 (which worker or server fails, and when).
std::pair<int, int64_t> index_at(const std::string& flag, const std::string& v, const char* form) {
  const auto at = v.find('@');
  if (at == std::string::npos) throw bad_input(flag + ": expected " + form + ", got '" + v + "'");
  const int index = to_int(flag, v.substr(0, at));
  const int64_t n = to_int(flag, v.substr(at + 1));
  if (index < 0 || n < 1) throw bad_input(flag + ": expected " + form + " with a first number >= 0 and a second >= 1, got '" + v + "'");
  return {index, n};
}
}  // namespace

int main(int argc, char** argv) {
  std::string project_path, events = "text", run_dir, strategy;
  std::optional<std::string> devices;  // given but empty = zero replicas, an error
  int epochs = 0, threads = -1, batch = 0, max_steps = -1, collective_timeout = 0;
  bool no_graphs = false;
  bool no_run_dir = false, resume = false;
  std::string resume_run, evaluate, export_from, export_to;
  std::optional<int> servers, staleness, straggler;
  std::optional<int64_t> min_shard_bytes;
  int fail_worker = -1, fail_server = -1;
  int64_t fail_step = 0, fail_update = 0;
  double slowdown = 2.0;
  std::optional<double> learning_rate;
  std::optional<uint64_t> seed;
  std::optional<RunNotes> run_notes;  // --run-name, --tags
  // Schedule and callback flags, applied over the project's training
  // settings once it is loaded (Trainer::prepare checks the values).
  std::vector<std::function<void(TrainingConfig&)>> training_flags;
  // "M:P[:F]": a monitored metric, a patience and an optional factor.
  auto monitor_flag = [](const std::string& flag, const std::string& v, bool with_factor) {
    const auto parts = split(v, ':');
    if (parts.size() < 2 || parts.size() > (with_factor ? 3u : 2u) || parts[0].empty())
      throw bad_input(flag + ": expected METRIC:PATIENCE" + (with_factor ? "[:FACTOR]" : "") + ", e.g. val_loss:3; got '" + v + "'");
    return std::tuple{parts[0], to_int(flag, parts[1]), parts.size() == 3 ? to_double(flag, parts[2]) : 0.1};
  };
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw bad_input(a + ": needs a value");
        return argv[++i];
      };
      if (a == "-h" || a == "--help") {
        usage(stdout);
        return 0;
      } else if (a == "--version") {
        std::printf("strata-run %s\n", STRATA_VERSION);
        return 0;
      } else if (a == "--learning-rate") {
        learning_rate = to_double(a, value());
        if (!(*learning_rate > 0) || !std::isfinite(*learning_rate))
          throw bad_input(std::string("--learning-rate: must be a positive number, got ") + argv[i]);
      } else if (a == "--lr-schedule") {
        training_flags.push_back([type = value()](TrainingConfig& t) { t.lr_schedule.type = type; });
      } else if (a == "--warmup-epochs") {
        training_flags.push_back([x = to_double(a, value())](TrainingConfig& t) { t.lr_schedule.warmup_epochs = x; });
      } else if (a == "--early-stopping") {
        auto [m, p, f] = monitor_flag(a, value(), false);
        training_flags.push_back([m, p](TrainingConfig& t) {
          t.early_stopping.enabled = true;
          t.early_stopping.monitor = m;
          t.early_stopping.patience = p;
        });
      } else if (a == "--reduce-lr-on-plateau") {
        auto [m, p, f] = monitor_flag(a, value(), true);
        training_flags.push_back([m, p, f](TrainingConfig& t) {
          t.reduce_lr_on_plateau.enabled = true;
          t.reduce_lr_on_plateau.monitor = m;
          t.reduce_lr_on_plateau.patience = p;
          t.reduce_lr_on_plateau.factor = f;
        });
      } else if (a == "--seed") {
        const std::string v = value();
        if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 19)
          throw bad_input("--seed: expected a whole number from 0 to 10^19, got '" + v + "'");
        seed = std::stoull(v);
      } else if (a == "--list-devices") {
        print_devices();
        return 0;
      } else if (a == "--epochs") {
        epochs = to_int(a, value());
        if (epochs <= 0) throw bad_input("--epochs: must be positive");
      } else if (a == "--events") {
        events = value();
        if (events != "text" && events != "jsonl") throw bad_input("--events: must be text or jsonl, got '" + events + "'");
      } else if (a == "--run-dir") {
        run_dir = value();
      } else if (a == "--resume") {
        resume = true;
        if (i + 1 < argc && argv[i + 1][0] != '-' && !std::string(argv[i + 1]).ends_with(".strata")) resume_run = argv[++i];
      } else if (a == "--evaluate") {
        evaluate = value();
      } else if (a == "--export-weights") {
        export_from = value();
        export_to = value();
      } else if (a == "--run-name") {
        if (!run_notes) run_notes.emplace();
        run_notes->name = value();
      } else if (a == "--tags") {
        if (!run_notes) run_notes.emplace();
        run_notes->tags = parse_tags(value());
      } else if (a == "--no-run-dir") {
        no_run_dir = true;
      } else if (a == "--strategy") {
        strategy = value();
      } else if (a == "--devices") {
        devices = value();
      } else if (a == "--threads") {
        threads = to_int(a, value());
        if (threads < 0) throw bad_input("--threads: must be 0 (every core) or positive, got " + std::to_string(threads));
      } else if (a == "--batch-size") {
        batch = to_int(a, value());
        if (batch <= 0) throw bad_input("--batch-size: must be positive, got " + std::to_string(batch));
      } else if (a == "--collective-timeout") {
        collective_timeout = to_int(a, value());
        if (collective_timeout <= 0) throw bad_input("--collective-timeout: must be a positive number of seconds");
      } else if (a == "--servers") {
        servers = to_int(a, value());
        if (*servers <= 0) throw bad_input("--servers: must be at least 1, got " + std::to_string(*servers));
      } else if (a == "--staleness") {
        const std::string v = value();
        staleness = v == "inf" || v == "unbounded" ? -1 : to_int(a, v);
        if (v != "inf" && v != "unbounded" && *staleness < 0)
          throw bad_input("--staleness: must be 0 (synchronous), a positive bound, or inf; got " + v);
      } else if (a == "--min-shard-bytes") {
        min_shard_bytes = to_int(a, value());
        if (*min_shard_bytes < 0) throw bad_input("--min-shard-bytes: must be 0 (whole variables) or positive");
      } else if (a == "--straggler") {
        const std::string v = value();
        const auto colon = v.find(':');
        straggler = to_int(a, v.substr(0, colon));
        if (colon != std::string::npos) {
          try {
            slowdown = std::stod(v.substr(colon + 1));
          } catch (...) {
            throw bad_input("--straggler: expected R or R:FACTOR, got '" + v + "'");
          }
        }
        if (*straggler < 0 || !(slowdown >= 1.0)) throw bad_input("--straggler: replica must be >= 0 and the factor >= 1, got '" + v + "'");
      } else if (a == "--fail-worker") {
        std::tie(fail_worker, fail_step) = index_at(a, value(), "W@STEP");
      } else if (a == "--fail-server") {
        std::tie(fail_server, fail_update) = index_at(a, value(), "S@UPDATE");
      } else if (a == "--max-steps") {
        max_steps = to_int(a, value());
        if (max_steps < 0) throw bad_input("--max-steps: must be 0 (whole epoch) or positive, got " + std::to_string(max_steps));
      } else if (a == "--no-graphs") {
        no_graphs = true;
      } else if (!a.empty() && a[0] == '-') {
        throw bad_input("unknown option '" + a + "' (see --help)");
      } else if (project_path.empty()) {
        project_path = a;
      } else {
        throw bad_input("unexpected argument '" + a + "'");
      }
    }
    if (project_path.empty()) {
      usage(stderr);
      return 2;
    }

    RunConfig config = load_project(project_path);
    if (epochs > 0) config.training.epochs = epochs;
    if (learning_rate) config.training.optimizer.learning_rate = static_cast<float>(*learning_rate);
    if (seed) config.training.seed = *seed;
    for (auto& flag : training_flags) flag(config.training);
    if (!strategy.empty()) config.strategy.name = strategy;
    if (devices) {
      config.strategy.devices.clear();
      for (auto& d : Device::parse_list(*devices)) config.strategy.devices.push_back(d.str());
    }
    if (threads >= 0) config.training.threads = threads;
    if (batch > 0) config.training.batch_size = batch;
    if (max_steps >= 0) config.training.max_steps_per_epoch = max_steps;
    if (no_graphs) config.training.step_graphs = false;
    if (collective_timeout > 0) config.strategy.collective_timeout = collective_timeout;
    if (servers) config.strategy.servers = *servers;
    if (staleness) config.strategy.staleness = *staleness;
    if (min_shard_bytes) config.strategy.min_shard_bytes = *min_shard_bytes;
    if (straggler) {
      config.strategy.straggler = *straggler;
      config.strategy.slowdown = slowdown;
    }
    if (fail_server >= 0) {
      config.strategy.fail_server = fail_server;
      config.strategy.fail_server_update = fail_update;
    }
    if (fail_worker >= 0) {
      config.strategy.fail_worker = fail_worker;
      config.strategy.fail_worker_step = fail_step;
    }

    if (!evaluate.empty()) return evaluate_command(config, evaluate, events == "jsonl");
    if (!export_from.empty()) return export_command(config, export_from, export_to);

    if (run_notes && no_run_dir) throw bad_input("--run-name/--tags: name a run folder; they cannot be combined with --no-run-dir");
    std::string checkpoint;
    if (resume) {
      if (no_run_dir) throw bad_input("--resume: continues a run folder; it cannot be combined with --no-run-dir");
      if (resume_run.empty()) {
        auto runs = RunDirectory::runs_of(project_path);
        if (runs.empty()) throw bad_input("--resume: " + project_path + " has no previous run to resume");
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
    sink.add(cluster.rank() != 0 ? static_cast<EventSink*>(&rank_log)
             : events == "jsonl" ? static_cast<EventSink*>(&jsonl)
                                 : &console);
    RunFolderOptions folder;
    if (!no_run_dir) folder.dir = run_dir.empty() ? RunDirectory::default_for(project_path) : run_dir;
    folder.resume_from = checkpoint;
    folder.notes = run_notes;
    session.open(folder);
    if (events == "text") {
      if (session.directory()) std::printf("run folder: %s\n", session.directory()->path().c_str());
      if (session.resumed())
        std::printf("resuming from %s (step %lld)\n", checkpoint.c_str(), static_cast<long long>(session.resumed()->position.step));
    }
    Trainer& trainer = session.trainer();

    std::signal(SIGINT, on_sigint);
    std::signal(SIGTERM, on_sigint);
    // The handler only sets a flag; this thread turns it into a graceful stop.
    // A jthread is joined on every path out of this scope, exceptions included.
    std::jthread watcher([&](std::stop_token stop) {
      while (!stop.stop_requested()) {
        if (g_interrupted) {
          trainer.request_stop();
          if (events == "text") std::fprintf(stderr, "\ninterrupted: stopping after the current step\n");
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
    FinishedEvent fin = session.run();
    if (fin.status == RunStatus::Completed) return 0;
    if (fin.status == RunStatus::Stopped) return 130;
    // A failed worker must not leave the others waiting in a collective.
    if (cluster.size() > 1) cluster.abort(1, fin.message);
    return 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "strata-run: %s\n", e.what());
    return e.kind() == ErrorKind::BadInput ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata-run: internal error: %s\n", e.what());
    return 1;
  }
}
