#include "BenchSection.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ConvolutionChoices.h"
#include "MarkdownReport.h"
#include "MultiDeviceChecks.h"
#include "TrainingChecks.h"
#include "TrainingRun.h"
#include "backend/Backend.h"

namespace strata::gpu_check {

namespace {
// (model, batch, "eager" | "graph", tf32) -> samples per second, from the
// peer's JSON lines (bench/pytorch_gpu_peer.py).
using PeerKey = std::tuple<std::string, int64_t, std::string, bool>;
std::map<PeerKey, double> read_peer(const std::string& path) {
  std::map<PeerKey, double> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("batch") || !j.contains("mode") || !j.contains("samples_per_sec")) continue;
    out[{j.value("model", "mlp"), j["batch"].get<int64_t>(), j["mode"].get<std::string>(), j.value("tf32", false)}] =
        j["samples_per_sec"].get<double>();
  }
  return out;
}

std::string figure(double v) {
  char buf[32];
  if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  else std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  return buf;
}

struct Model {
  const char* peer_name;  // in the peer's lines
  const char* project;    // resources/examples/<project>.strata
  const char* title;
  std::vector<int64_t> batches;
  int64_t small;  // the batch where the goal is twice the graph-captured peer
};

// A row that could not be measured says why in the table and fails a record,
// and the other rows are still measured.
// With `tf32` (the process runs with STRATA_TF32=1) Strata's figure is
// compared with the peer's graph with TF32 on, else with TF32 off. `variant`
// ends the title.
std::string table(const Device& device, const Model& m, const std::map<PeerKey, double>& peer, bool tf32,
                  std::vector<CheckRecord>& failures, const std::string& variant = "") {
  std::string md =
      std::string("### ") + m.title + variant + "\n\n" +
      "| batch | Strata samples/s | step | device operations per step | new device memory | PyTorch eager | PyTorch "
      "graph | PyTorch graph TF32 | Strata / graph" +
      (tf32 ? " TF32" : "") + " | goal |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const int64_t batch : m.batches) {
    ThroughputFigure f;
    try {
      f = measure_throughput({device}, m.project, batch);
    } catch (const std::exception& e) {
      md += "| " + std::to_string(batch) + " | not measured: " + table_cell(e.what()) + " | | | | | | | | |\n";
      failures.push_back(CheckRecord{"bench", std::string(m.title) + ", batch " + std::to_string(batch),
                                     std::numeric_limits<double>::infinity(), 0, false, e.what()});
      continue;
    }
    auto find = [&](const char* mode, bool with_tf32) {
      auto it = peer.find({m.peer_name, batch, mode, with_tf32});
      return it == peer.end() ? 0.0 : it->second;
    };
    const double eager = find("eager", false), graph = find("graph", false), graph_tf32 = find("graph", true);
    auto cell = [](double v) { return v > 0 ? figure(v) : std::string("-"); };
    char ratio[32] = "-";
    const double against = tf32 ? graph_tf32 : graph;
    if (against > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", f.samples_per_sec / against);
    char row[512];
    std::snprintf(row, sizeof row, "| %lld | %s | %.0f us | %lld | %.0f MiB | %s | %s | %s | %s | %s |\n",
                  static_cast<long long>(batch), figure(f.samples_per_sec).c_str(), f.step_us,
                  static_cast<long long>(f.graph_operations), static_cast<double>(f.device_bytes) / (1 << 20),
                  cell(eager).c_str(), cell(graph).c_str(), cell(graph_tf32).c_str(), ratio,
                  batch == m.small ? ">= 2x" : ">= 1x");
    md += row;
  }
  return md + "\n";
}

// What recording the step timeline costs (#19's goal: traced >= 0.99 of
// untraced), where it shows most: the launch-bound MLP at batch 128, over a
// second or more of steps, so sampled device lanes' bursts (a few a second)
// are in it. Runs alternate, untraced then each way of tracing, so drift in
// the machine hits all alike: sampled device lanes (the default), device
// lanes in every step, and the host's lanes alone, which together say how
// much of the cost is the device's timing marks and how much the host's.
std::string tracing_cost(const Device& device, std::vector<CheckRecord>& failures) {
  using trace::DeviceLanes;
  std::string md =
      "### Step timeline recorded (--trace) against not\n\n| pair | untraced samples/s | traced (device lanes "
      "sampled) | / untraced | device lanes every step | / untraced | host lanes only | / untraced |\n"
      "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  constexpr int kPairs = 3, kEpochs = 21;  // 468 steps of about 0.1 ms an epoch
  const DeviceLanes ways[] = {DeviceLanes::Sampled, DeviceLanes::EveryStep, DeviceLanes::Off};
  std::vector<double> ratios[3];
  try {
    for (int pair = 1; pair <= kPairs; ++pair) {
      auto run = [&](std::optional<DeviceLanes> lanes) {
        return sustained_throughput(device, "fashion-mlp", 128, kEpochs, lanes);
      };
      const double off = run(std::nullopt);
      md += "| " + std::to_string(pair) + " | " + figure(off);
      for (int w = 0; w < 3; ++w) {
        const double on = run(ways[w]);
        ratios[w].push_back(on / off);
        char cells[80];
        std::snprintf(cells, sizeof cells, " | %s | %.3f", figure(on).c_str(), on / off);
        md += cells;
      }
      md += " |\n";
    }
  } catch (const std::exception& e) {
    failures.push_back(
        CheckRecord{"bench", "tracing cost, MLP batch 128", std::numeric_limits<double>::infinity(), 0, false, e.what()});
    return md + "\nnot measured: " + e.what() + "\n\n";
  }
  char line[300];
  std::snprintf(line, sizeof line,
                "\nMLP, batch 128, mean over %d epochs after the first: median traced / untraced %.3f with sampled "
                "device lanes (goal >= 0.99), %.3f with device lanes in every step, %.3f with the host's lanes "
                "alone.\n\n",
                kEpochs - 1, median_of(ratios[0]), median_of(ratios[1]), median_of(ratios[2]));
  return md + line;
}

// What computing the weight gradients on a side stream beside the input
// gradients gains (Backend::begin_branch), each model at its smallest batch
// and the CNN at 256 too: branches on against --no-gradient-branches,
// measured as the throughput tables are, the two ways alternated.
std::string gradient_branches_gain(const Device& device, std::vector<CheckRecord>& failures) {
  std::string md =
      "### Weight gradients on a side stream, against in order\n\n| model | batch | in order | side stream | side / in "
      "order |\n|---|---:|---:|---:|---:|\n";
  for (const auto& [project, batch] :
       std::vector<std::pair<std::string, int64_t>>{{"fashion-mlp", 128}, {"fashion-cnn", 64}, {"fashion-cnn", 256}}) {
    try {
      double in_order = 0, branched = 0;
      for (int round = 0; round < 2; ++round) {
        in_order = std::max(in_order, measure_throughput({device}, project, batch, 20, 200, false).samples_per_sec);
        branched = std::max(branched, measure_throughput({device}, project, batch, 20, 200, true).samples_per_sec);
      }
      char row[200];
      std::snprintf(row, sizeof row, "| %s | %lld | %s | %s | %.2f |\n", project.c_str(), static_cast<long long>(batch),
                    figure(in_order).c_str(), figure(branched).c_str(), branched / in_order);
      md += row;
    } catch (const std::exception& e) {
      md += "| " + project + " | " + std::to_string(batch) + " | not measured: " + table_cell(e.what()) + " | | |\n";
      failures.push_back(CheckRecord{"bench", project + " side stream, batch " + std::to_string(batch),
                                     std::numeric_limits<double>::infinity(), 0, false, e.what()});
    }
  }
  return md +
         "\nSamples/s, the better of two runs each way, alternated, with the convolution ways the process chose at its "
         "first step of each shape (a kernel gradient on the side stream takes an im2col way).\n\n";
}

// Where the CNN's replayed step goes on the device at the table's batches
// (its device lanes' phases), then the ways its convolutions took there
// (their training steps and the evaluation's larger batches alike).
std::string cnn_step_on_device(const Device& device, const Model& cnn, std::vector<CheckRecord>& failures) {
  std::string md =
      "### Where the CNN's step goes on the device\n\n| batch | device step | forward | backward | optimizer | "
      "rest (the step's figures) |\n|---:|---:|---:|---:|---:|---:|\n";
  for (const int64_t batch : cnn.batches) {
    try {
      const DevicePhaseTimes t = device_phase_times(device, cnn.project, batch);
      char row[200];
      std::snprintf(row, sizeof row, "| %lld | %.0f us | %.0f us | %.0f us | %.0f us | %.0f us |\n",
                    static_cast<long long>(batch), t.step_us, t.forward_us, t.backward_us, t.optimizer_us, t.rest_us);
      md += row;
    } catch (const std::exception& e) {
      md += "| " + std::to_string(batch) + " | not measured: " + table_cell(e.what()) + " | | | | |\n";
      failures.push_back(CheckRecord{"bench", std::string(cnn.title) + " device phases, batch " + std::to_string(batch),
                                     std::numeric_limits<double>::infinity(), 0, false, e.what()});
    }
  }
  md +=
      "\nEach column's median over 35 replayed steps (the 6th to the 40th) with device lanes in every step (timing marks in "
      "the step's graph).\n\n";
  return md + convolution_choices_table(backend_for(device).convolution_choices(),
                                        std::set<int64_t>(cnn.batches.begin(), cnn.batches.end()));
}
}  // namespace

namespace {
// What tells the variants apart, indexed by BenchSection::Variant. The
// second-process ones need `env`=`value` in their process's environment.
struct VariantInfo {
  const char* name;
  const char* title;
  const char* env;
  const char* value;
  bool tf32;                 // against the peer's TF32 graph
  const char* table_suffix;  // ends the CNN table's title
  const char* note;          // under the table
};
constexpr VariantInfo kVariants[] = {
    {"bench", "Training-step throughput beside PyTorch", nullptr, nullptr, false, "", ""},
    {"bench-tf32", "Training-step throughput with TF32 (STRATA_TF32=1) beside PyTorch's", "STRATA_TF32", "1", true,
     ", TF32 on both sides",
     "Strata with STRATA_TF32=1 (TF32 tensor cores in cuBLASLt and cuDNN), measured as in the float32 table, against "
     "PyTorch graph-captured with TF32 on (torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32).\n\n"},
    {"bench-nondet", "Training-step throughput with non-deterministic convolutions (STRATA_DETERMINISTIC=0) beside PyTorch's",
     "STRATA_DETERMINISTIC", "0", false, ", non-deterministic convolutions",
     "Strata with STRATA_DETERMINISTIC=0 (cuDNN's convolution algorithms that sum with atomics compete in the race: a "
     "replayed step no longer reproduces the first one's bits), float32, measured as in the float32 table, against "
     "PyTorch graph-captured in float32 (whose cuDNN runs such algorithms by default).\n\n"},
};
const VariantInfo& info(BenchSection::Variant v) { return kVariants[static_cast<int>(v)]; }
}  // namespace

std::string BenchSection::name() const { return info(variant_).name; }
std::string BenchSection::title() const { return info(variant_).title; }

std::vector<CheckRecord> BenchSection::run(const SectionContext& context) {
  const auto peer = read_peer(context.peer_results);
  std::vector<CheckRecord> failures;
  const Model cnn{"cnn", "fashion-cnn", "TF-tutorial CNN", {64, 256, 1024}, 64};
  if (const VariantInfo& v = info(variant_); v.env) {
    // The backend chooses its arithmetic and its convolution algorithms once
    // per process, from the environment.
    const std::string setting = std::string(v.env) + "=" + v.value;
    const char* env = std::getenv(v.env);
    if (!env || std::string(env) != v.value) {
      table_ = "not measured: run this section in a process started with " + setting + "\n";
      return {CheckRecord{"bench", name(), std::numeric_limits<double>::infinity(), 0, false,
                          setting + " is not set: the backend would measure its defaults"}};
    }
    table_ = table(context.device, cnn, peer, v.tf32, failures, v.table_suffix) + v.note +
             cnn_step_on_device(context.device, cnn, failures);
    return failures;
  }
  std::string md = table(context.device, Model{"mlp", "fashion-mlp", "MLP (784-256-128-10)", {128, 1024, 8192}, 128}, peer,
                         false, failures);
  md += table(context.device, cnn, peer, false, failures);
  const std::string on_device = cnn_step_on_device(context.device, cnn, failures);
  md +=
      "Strata: median step interval after 20 warm-up steps over 200 steps of the real training loop (batches "
      "drawn from the Fashion-MNIST files in a shuffled order, gathered and converted on the device from the training set "
      "copied there once, every step's loss read back, one step late), "
      "float32. Device operations per step: the kernels, copies and fills of the captured step graph one replay runs. "
      "New device memory: what the device's pool took from the driver during that run (the pool keeps "
      "what earlier runs of the process freed). PyTorch: bench/pytorch_gpu_peer.py on random inputs already on the "
      "GPU, cuDNN autotuned, TF32 off unless the column says so.\n";
  md += "\n" + on_device;
  md += gradient_branches_gain(context.device, failures);
  // What two replicas sharing the device cost against one on the same
  // global batch (#15): each runs half the batch, and the gradients are
  // summed through device memory before the update.
  md += scaling_table({context.device, context.device}, {{"fashion-mlp", 1024}, {"fashion-cnn", 256}}, 20, 200, failures);
  md += tracing_cost(context.device, failures);
  table_ = md;
  return failures;
}

}  // namespace strata::gpu_check
