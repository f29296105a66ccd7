#include "BenchSection.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "TrainingChecks.h"

namespace strata::gpu_check {

namespace {
// (batch, "eager" | "graph") -> samples per second, from the peer's JSON lines.
std::map<std::pair<int64_t, std::string>, double> read_peer(const std::string& path) {
  std::map<std::pair<int64_t, std::string>, double> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("batch") || !j.contains("mode") || !j.contains("samples_per_sec")) continue;
    out[{j["batch"].get<int64_t>(), j["mode"].get<std::string>()}] = j["samples_per_sec"].get<double>();
  }
  return out;
}

std::string figure(double v) {
  char buf[32];
  if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  else std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  return buf;
}
}  // namespace

std::vector<CheckRecord> BenchSection::run(const SectionContext& context) {
  const auto peer = read_peer(context.peer_results);
  std::string md =
      "| batch | Strata samples/s | step | new device memory | PyTorch eager | PyTorch graph | Strata / graph | goal |\n"
      "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const int64_t batch : {int64_t{128}, int64_t{1024}, int64_t{8192}}) {
    const ThroughputFigure f = measure_throughput(context.device, batch);
    char row[512];
    const auto eager = peer.find({batch, "eager"}), graph = peer.find({batch, "graph"});
    const std::string e = eager == peer.end() ? "-" : figure(eager->second);
    const std::string g = graph == peer.end() ? "-" : figure(graph->second);
    char ratio[32] = "-";
    if (graph != peer.end()) std::snprintf(ratio, sizeof ratio, "%.2fx", f.samples_per_sec / graph->second);
    std::snprintf(row, sizeof row, "| %lld | %s | %.0f us | %.0f MiB | %s | %s | %s | %s |\n",
                  static_cast<long long>(batch), figure(f.samples_per_sec).c_str(), f.step_us,
                  static_cast<double>(f.device_bytes) / (1 << 20), e.c_str(), g.c_str(), ratio,
                  batch == 128 ? ">= 2x" : ">= 1x");
    md += row;
  }
  md += "\nStrata: median step interval after 20 warm-up steps over 200 steps of the real training loop (batches "
        "drawn from the Fashion-MNIST files, copied to the device and converted there, every step's loss read back). "
        "New device memory: what the device's pool took from the driver during that run (the pool keeps what earlier "
        "runs of the process freed). PyTorch: "
        "bench/pytorch_gpu_mlp.py on random inputs already on the GPU, float32, TF32 off.\n";
  table_ = md;
  return {};
}

}  // namespace strata::gpu_check
