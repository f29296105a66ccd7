#include "RunOptions.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <tuple>

#include "core/Device.h"
#include "core/Error.h"

namespace strata {

namespace {
// A whole number from lo up to the type's largest: one outside is refused,
// never wrapped (--batch-size 4294967360 would otherwise train with batch 64).
// `below` says what the flag takes, for a number under lo ("must be positive"),
// so -99999999999999999999 gets the flag's own words, not the type's limit.
template <typename I>
I to_integer(const std::string& flag, const std::string& v, I lo, const std::string& below) {
  // from_chars takes digits after an optional minus only (stoll would also take spaces and a plus).
  I n = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ptr != v.data() + v.size() || ec == std::errc::invalid_argument)
    throw bad_input(flag + ": expected an integer, got '" + v + "'");
  if (ec == std::errc::result_out_of_range && !v.starts_with('-'))
    throw bad_input(flag + ": " + v + " is too large (at most " + std::to_string(std::numeric_limits<I>::max()) + ")");
  if (ec == std::errc::result_out_of_range || n < lo)
    throw bad_input(flag + ": " +
                    (below.empty() ? v + " is too small (at least " + std::to_string(lo) + ")" : below + ", got " + v));
  return n;
}
int to_int(const std::string& flag, const std::string& v, int lo, const std::string& below) {
  return to_integer<int>(flag, v, lo, below);
}
// Any int: what it may be is checked where the setting is (a patience, by the project's rules).
int to_int(const std::string& flag, const std::string& v) {
  return to_integer<int>(flag, v, std::numeric_limits<int>::min(), "");
}
int64_t to_int64(const std::string& flag, const std::string& v, int64_t lo, const std::string& below) {
  return to_integer<int64_t>(flag, v, lo, below);
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
  try {
    return {to_int(flag, v.substr(0, at), 0, ""), to_int64(flag, v.substr(at + 1), 1, "")};
  } catch (const Error&) {
    // The whole value, not the half that failed.
    throw bad_input(flag + ": expected " + form + " with a first number >= 0 and a second >= 1, got '" + v + "'");
  }
}
}  // namespace

void print_usage(std::FILE* out) {
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
               "  --fail-replica R@STEP demos/tests: replica R of a synchronous strategy fails at step STEP\n"
               "  --fail-server S@N     demos/tests: parameter server S fails at its update N (the run fails)\n"
               "  --collective-timeout S  seconds a collective waits for the other ranks (or, NCCL, the other\n"
               "                        GPUs) before failing (300)\n"
               "  --devices LIST        replica devices, e.g. cpu:0,cpu:1 or gpu:0,gpu:1 (gpu:0,gpu:0: two\n"
               "                        replicas sharing one GPU)\n"
               "  --sharded-update M    auto, on or off: each replica updates 1/N of the weights and optimizer\n"
               "                        state, then the replicas gather the shards (ZeRO-1; auto: where it can)\n"
               "  --threads N           CPU threads in all, divided among replicas (0 = all cores)\n"
               "  --batch-size N        global batch size\n"
               "  --max-steps N         at most N steps per epoch\n"
               "  --trace FILE          record the step timeline: a Chrome trace file (Perfetto, chrome://tracing)\n"
               "                        and a step_spans event per step; under mpirun each rank writes\n"
               "                        FILE with .rankN before its extension\n"
               "  --trace-max-mib N     the trace file's limit, 512 MiB by default (later spans are left out\n"
               "                        of it, with a warning; 0: no limit)\n"
               "  --device-lanes MODE   with --trace, the GPUs' own lanes (timing marks in their streams):\n"
               "                        sampled (bursts of 20 steps, at most 4 a second; every step of\n"
               "                        a slow run), every-step, or off (the host's lanes only)\n"
               "  --no-device-lanes     --device-lanes off\n"
               "  --merge-traces OUT IN...  merge the ranks' trace files into one, clocks aligned, and exit\n"
               "  --no-graphs           run every step op by op (GPU/sim devices otherwise replay each\n"
               "                        step as one captured graph from the second step on)\n"
               "  --no-gradient-branches  compute a GPU's weight gradients in order with the rest, not\n"
               "                        on a second stream beside the input gradients\n"
               "  --resume [RUN]        continue the latest (or the given) run from its latest checkpoint\n"
               "  --evaluate CKPT       test loss, accuracy, per-class accuracy, confusion matrix of a\n"
               "                        checkpoint, run folder or .safetensors file (JSON with --events jsonl)\n"
               "  --export-weights CKPT OUT.safetensors   write a checkpoint's weights as one file\n"
               "  --list-devices        print the devices this machine has and exit\n"
               "  --version             print the version and exit\n\n"
               "exit codes: 0 completed, 1 training failed, 2 bad input, 130 stopped by Ctrl-C\n");
}

RunOptions parse_run_options(int argc, char** argv) {
  RunOptions o;
  auto set = [&o](std::function<void(RunConfig&)> f) { o.overrides.push_back(std::move(f)); };
  // "M:P[:F]": a monitored metric, a patience and an optional factor.
  auto monitor_flag = [](const std::string& flag, const std::string& v, bool with_factor) {
    const auto parts = split(v, ':');
    if (parts.size() < 2 || parts.size() > (with_factor ? 3u : 2u) || parts[0].empty())
      throw bad_input(flag + ": expected METRIC:PATIENCE" + (with_factor ? "[:FACTOR]" : "") + ", e.g. val_loss:3; got '" +
                      v + "'");
    return std::tuple{parts[0], to_int(flag, parts[1]), parts.size() == 3 ? to_double(flag, parts[2]) : 0.1};
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw bad_input(a + ": needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      o.command = RunOptions::Command::Help;
      return o;
    } else if (a == "--version") {
      o.command = RunOptions::Command::Version;
      return o;
    } else if (a == "--list-devices") {
      o.command = RunOptions::Command::ListDevices;
      return o;
    } else if (a == "--learning-rate") {
      const double lr = to_double(a, value());
      if (!(lr > 0) || !std::isfinite(lr))
        throw bad_input(std::string("--learning-rate: must be a positive number, got ") + argv[i]);
      set([lr](RunConfig& c) { c.training.optimizer.learning_rate = static_cast<float>(lr); });
    } else if (a == "--lr-schedule") {
      set([type = value()](RunConfig& c) { c.training.lr_schedule.type = type; });
    } else if (a == "--warmup-epochs") {
      set([x = to_double(a, value())](RunConfig& c) { c.training.lr_schedule.warmup_epochs = x; });
    } else if (a == "--early-stopping") {
      auto [m, p, f] = monitor_flag(a, value(), false);
      set([m, p](RunConfig& c) {
        c.training.early_stopping.enabled = true;
        c.training.early_stopping.monitor = m;
        c.training.early_stopping.patience = p;
      });
    } else if (a == "--reduce-lr-on-plateau") {
      auto [m, p, f] = monitor_flag(a, value(), true);
      set([m, p, f](RunConfig& c) {
        auto& r = c.training.reduce_lr_on_plateau;
        r.enabled = true;
        r.monitor = m;
        r.patience = p;
        r.factor = f;
      });
    } else if (a == "--seed") {
      const std::string v = value();
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 19)
        throw bad_input("--seed: expected a whole number from 0 to 10^19, got '" + v + "'");
      set([seed = std::stoull(v)](RunConfig& c) { c.training.seed = seed; });
    } else if (a == "--epochs") {
      const int epochs = to_int(a, value(), 1, "must be positive");
      set([epochs](RunConfig& c) { c.training.epochs = epochs; });
    } else if (a == "--events") {
      o.events = value();
      if (o.events != "text" && o.events != "jsonl")
        throw bad_input("--events: must be text or jsonl, got '" + o.events + "'");
    } else if (a == "--run-dir") {
      o.run_dir = value();
    } else if (a == "--resume") {
      o.resume = true;
      if (i + 1 < argc && argv[i + 1][0] != '-' && !std::string(argv[i + 1]).ends_with(".strata")) o.resume_run = argv[++i];
    } else if (a == "--evaluate") {
      o.evaluate = value();
    } else if (a == "--export-weights") {
      o.export_from = value();
      o.export_to = value();
    } else if (a == "--run-name") {
      if (!o.run_notes) o.run_notes.emplace();
      o.run_notes->name = value();
    } else if (a == "--tags") {
      if (!o.run_notes) o.run_notes.emplace();
      o.run_notes->tags = parse_tags(value());
    } else if (a == "--no-run-dir") {
      o.no_run_dir = true;
    } else if (a == "--strategy") {
      set([name = value()](RunConfig& c) { c.strategy.name = name; });
    } else if (a == "--devices") {
      // Given but empty = zero replicas, an error (from Device::parse_list).
      set([list = value()](RunConfig& c) {
        c.strategy.devices.clear();
        for (auto& d : Device::parse_list(list)) c.strategy.devices.push_back(d.str());
      });
    } else if (a == "--sharded-update") {
      const std::string mode = value();
      if (mode != "auto" && mode != "on" && mode != "off")
        throw bad_input("--sharded-update: must be auto, on or off, got '" + mode + "'");
      set([mode](RunConfig& c) { c.strategy.sharded_update = mode; });
    } else if (a == "--threads") {
      const int threads = to_int(a, value(), 0, "must be 0 (every core) or positive");
      set([threads](RunConfig& c) { c.training.threads = threads; });
    } else if (a == "--batch-size") {
      const int batch = to_int(a, value(), 1, "must be positive");
      set([batch](RunConfig& c) { c.training.batch_size = batch; });
    } else if (a == "--collective-timeout") {
      const int seconds = to_int(a, value(), 1, "must be a positive number of seconds");
      set([seconds](RunConfig& c) { c.strategy.collective_timeout = seconds; });
    } else if (a == "--servers") {
      const int servers = to_int(a, value(), 1, "must be at least 1");
      set([servers](RunConfig& c) { c.strategy.servers = servers; });
    } else if (a == "--staleness") {
      const std::string v = value();
      const bool unbounded = v == "inf" || v == "unbounded";
      const int staleness = unbounded ? -1 : to_int(a, v, 0, "must be 0 (synchronous), a positive bound, or inf");
      set([staleness](RunConfig& c) { c.strategy.staleness = staleness; });
    } else if (a == "--min-shard-bytes") {
      const int64_t bytes = to_int64(a, value(), 0, "must be 0 (whole variables) or positive");
      set([bytes](RunConfig& c) { c.strategy.min_shard_bytes = bytes; });
    } else if (a == "--straggler") {
      const std::string v = value();
      const auto colon = v.find(':');
      const int replica = to_int(a, v.substr(0, colon), 0, "replica must be >= 0");
      double slowdown = 2.0;
      if (colon != std::string::npos) {
        try {
          slowdown = std::stod(v.substr(colon + 1));
        } catch (...) {
          throw bad_input("--straggler: expected R or R:FACTOR, got '" + v + "'");
        }
      }
      if (!(slowdown >= 1.0)) throw bad_input("--straggler: the factor must be >= 1, got '" + v + "'");
      set([replica, slowdown](RunConfig& c) {
        c.strategy.straggler = replica;
        c.strategy.slowdown = slowdown;
      });
    } else if (a == "--fail-worker") {
      const auto [worker, step] = index_at(a, value(), "W@STEP");
      set([worker, step](RunConfig& c) {
        c.strategy.fail_worker = worker;
        c.strategy.fail_worker_step = step;
      });
    } else if (a == "--fail-replica") {
      const auto [replica, step] = index_at(a, value(), "R@STEP");
      set([replica, step](RunConfig& c) {
        c.strategy.fail_replica = replica;
        c.strategy.fail_replica_step = step;
      });
    } else if (a == "--fail-server") {
      const auto [server, update] = index_at(a, value(), "S@UPDATE");
      set([server, update](RunConfig& c) {
        c.strategy.fail_server = server;
        c.strategy.fail_server_update = update;
      });
    } else if (a == "--max-steps") {
      const int steps = to_int(a, value(), 0, "must be 0 (whole epoch) or positive");
      set([steps](RunConfig& c) { c.training.max_steps_per_epoch = steps; });
    } else if (a == "--trace") {
      set([file = value()](RunConfig& c) {
        c.trace.enabled = true;
        c.trace.file = file;
      });
    } else if (a == "--trace-max-mib") {
      const int mib = to_int(a, value(), 0, "must be 0 (no limit) or positive");
      set([mib](RunConfig& c) { c.trace.max_file_mib = mib; });
    } else if (a == "--merge-traces") {
      o.command = RunOptions::Command::MergeTraces;
      o.merge_output = value();
      while (i + 1 < argc) o.merge_inputs.emplace_back(argv[++i]);
      if (o.merge_inputs.empty()) throw bad_input("--merge-traces: needs OUT and at least one trace file to merge");
      return o;
    } else if (a == "--device-lanes") {
      const std::string mode = value();
      const auto lanes = trace::device_lanes_from_name(mode);
      if (!lanes) throw bad_input("--device-lanes: '" + mode + "' is not sampled, every-step or off");
      set([lanes = *lanes](RunConfig& c) { c.trace.device_lanes = lanes; });
    } else if (a == "--no-device-lanes") {
      set([](RunConfig& c) { c.trace.device_lanes = trace::DeviceLanes::Off; });
    } else if (a == "--no-graphs") {
      set([](RunConfig& c) { c.training.step_graphs = false; });
    } else if (a == "--no-gradient-branches") {
      set([](RunConfig& c) { c.training.gradient_branches = false; });
    } else if (!a.empty() && a[0] == '-') {
      throw bad_input("unknown option '" + a + "' (see --help)");
    } else if (o.project_path.empty()) {
      o.project_path = a;
    } else {
      throw bad_input("unexpected argument '" + a + "'");
    }
  }
  return o;
}

}  // namespace strata
