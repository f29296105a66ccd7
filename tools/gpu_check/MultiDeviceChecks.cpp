#include "MultiDeviceChecks.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <limits>

#include "MarkdownReport.h"
#include "TrainingChecks.h"
#include "TrainingRun.h"
#include "core/DeviceMemory.h"
#include "core/Tensor.h"
#include "distribute/MirroredStrategy.h"
#include "distribute/ReplicaContext.h"
#include "trace/StepBreakdown.h"

namespace strata::gpu_check {

namespace {

std::vector<std::string> names(const std::vector<Device>& devices) {
  std::vector<std::string> out;
  for (const Device& d : devices) out.push_back(d.str());
  return out;
}

std::string joined(const std::vector<Device>& devices) {
  std::string out;
  for (const Device& d : devices) {
    if (!out.empty()) out += ',';
    out += d.str();
  }
  return out;
}

RunConfig mirrored(RunConfig c, const std::vector<Device>& devices) {
  c.strategy.name = "mirrored";
  c.strategy.devices = names(devices);
  return c;
}

// The losses and every replica's weights of `got` against the one-replica `want`.
void compare_runs(std::vector<CheckRecord>& out, const std::string& op, const std::string& what, const Run& got,
                  const Run& want, int replicas, double tolerance) {
  out.push_back(
      compare(op, what + ", loss per step", as_floats(got.events.losses), as_floats(want.events.losses), tolerance));
  for (int r = 0; r < replicas; ++r) compare_weights(out, op, got, r, want, tolerance);
}

// The exact value replica r holds at element i before the reduction: small
// integers, so every partial sum is exact in float whatever the order.
float pattern(int r, size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + static_cast<size_t>(r) * 13) % 31) - 15);
}

struct AllReduceTiming {
  double seconds = 0;  // per all-reduce, the slowest replica's view
  int64_t wrong = 0;   // elements of the checked run that were not the exact sum
};

// One buffer per replica, all-reduced in place through the strategy's
// cross-device ops: a checked run, then timed batches of calls until
// `min_seconds`, each batch between two synchronisations and barriers.
AllReduceTiming time_all_reduce(Strategy& strategy, const std::vector<Device>& devices, size_t floats, double min_seconds) {
  const int n = strategy.num_replicas_in_sync();
  std::vector<int64_t> wrong(static_cast<size_t>(n), 0);
  std::atomic<bool> more{true};
  AllReduceTiming out;
  strategy.run_replicas([&](ReplicaContext& ctx) {
    const int r = ctx.replica_id_in_sync_group();
    const Device& device = devices[static_cast<size_t>(r)];
    std::vector<float> host(floats);
    for (size_t i = 0; i < floats; ++i) host[i] = pattern(r, i);
    const Tensor start = Tensor::from(Shape{static_cast<int64_t>(floats)}, host, device);
    std::vector<Tensor> one{start.clone()};
    ctx.all_reduce(ReduceOp::Sum, one);
    const std::vector<float> got = one.front().values();
    for (size_t i = 0; i < floats; ++i) {
      float want = 0;
      for (int q = 0; q < n; ++q) want += pattern(q, i);
      if (got[i] != want) ++wrong[static_cast<size_t>(r)];
    }
    // The values grow n-fold per call; a batch of 10 stays finite in float
    // for any n this runs with, and each batch starts from the pattern again.
    constexpr int kBatch = 10;
    DeviceMemory& memory = device_memory(device);
    double timed = 0;
    int64_t calls = 0;
    for (;;) {
      // The refill done, every replica here, and the stream waits the
      // barrier queued on devices done too: the clock starts on idle devices.
      one.front().copy_from(start);
      memory.synchronize();
      ctx.barrier();
      memory.synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < kBatch; ++k) ctx.all_reduce(ReduceOp::Sum, one);
      memory.synchronize();
      ctx.barrier();
      timed += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      calls += kBatch;
      // Every replica takes replica 0's decision; it cannot change before
      // the others read it (that needs the next batch's barriers).
      if (r == 0) more.store(timed < min_seconds);
      ctx.barrier();
      if (!more.load()) break;
    }
    if (r == 0) out.seconds = timed / static_cast<double>(calls);
  });
  for (int64_t w : wrong) out.wrong += w;
  return out;
}

std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, bytes >= (1u << 20) ? "%.0f MiB" : "%.0f KiB",
                static_cast<double>(bytes) / (bytes >= (1u << 20) ? 1 << 20 : 1 << 10));
  return buf;
}

CheckRecord not_measured(const std::string& what, const std::exception& e) {
  return CheckRecord{"multi_device", what, std::numeric_limits<double>::infinity(), 0, false, e.what()};
}

}  // namespace

std::vector<Device> devices_like(const Device& device) {
  std::vector<Device> out{device};
  if (device.kind == DeviceKind::Sim) {
    out.push_back(Device{DeviceKind::Sim, (device.index + 1) % kSimDeviceCount});
  } else if (device.kind == DeviceKind::Gpu) {
    for (const DeviceInfo& gpu : gpu_inventory().gpus)
      if (gpu.device != device && out.size() < 8) out.push_back(gpu.device);
  }
  return out;
}

std::vector<CheckRecord> check_mirrored_across(const std::vector<Device>& devices, int steps) {
  return guarded("mirrored_across", [&] {
    const int n = static_cast<int>(devices.size());
    const Run one = train(example_mlp(devices.front(), steps, "sgd"));
    RunConfig c = mirrored(example_mlp(devices.front(), steps, "sgd"), devices);
    c.strategy.sharded_update = "off";
    const Run all = train(c);
    // Sums of n partial gradients in another grouping: the same weights up
    // to float32 rounding, on every replica.
    std::vector<CheckRecord> out;
    compare_runs(out, "mirrored_across", joined(devices) + " (all-reduce), " + std::to_string(steps) + " steps", all, one, n,
                 1e-5);
    c.strategy.sharded_update = "on";
    const Run sharded = train(c);
    compare_runs(out, "mirrored_across", joined(devices) + " (sharded update), " + std::to_string(steps) + " steps", sharded,
                 one, n, 1e-5);
    return out;
  });
}

std::vector<CheckRecord> check_mixed_placement(const std::vector<Device>& devices, int steps) {
  return guarded("mixed_placement", [&] {
    const std::vector<Device> four{devices[0], devices[0], devices[1], devices[1]};
    const Run one = train(example_mlp(devices.front(), steps, "sgd"));
    const Run mixed = train(mirrored(example_mlp(devices.front(), steps, "sgd"), four));
    std::vector<CheckRecord> out;
    compare_runs(out, "mixed_placement", joined(four) + ", " + std::to_string(steps) + " steps", mixed, one, 4, 1e-5);
    return out;
  });
}

std::vector<CheckRecord> check_synchronized_batch_norm(const std::vector<Device>& devices, int steps) {
  return guarded("synchronized_batch_norm", [&] {
    RunConfig c = example_compared("fashion-cnn-bn", devices.front(), steps);
    // Dropout draws per replica: left out, so both runs see the same model.
    // ReLU and max pooling make the trajectory chaotic (the CPU's own runs
    // with the sums in another order part by 1e-4 within three steps at this
    // rate); tanh and average pooling keep rounding at rounding's size, as
    // the differential tests against PyTorch do, while unsynchronised
    // statistics (each replica's half batch) are off by 3e-3 at the first step.
    std::erase_if(c.layers, [](const nlohmann::json& l) { return l.value("type", "") == "dropout"; });
    for (nlohmann::json& l : c.layers) {
      if (l["type"] == "relu") l["type"] = "tanh";
      if (l["type"] == "max_pool2d") l["type"] = "average_pool2d";
    }
    c.training.optimizer.type = "sgd";
    c.training.optimizer.learning_rate = 0.05f;
    const Run one = train(c);
    const Run synced = train(mirrored(c, devices));
    // Statistics summed across devices in another grouping, through eight
    // steps of a CNN (1e-6 of the loss on sim): more rounding than the MLP's.
    std::vector<CheckRecord> out;
    compare_runs(out, "synchronized_batch_norm",
                 "CNN+BN (tanh, average pooling), " + joined(devices) + ", " + std::to_string(steps) + " steps", synced, one,
                 static_cast<int>(devices.size()), 1e-4);
    return out;
  });
}

std::string bus_bandwidth_table(const std::vector<Device>& devices, const std::vector<size_t>& sizes, double min_seconds,
                                std::vector<CheckRecord>& failures) {
  const int n = static_cast<int>(devices.size());
  auto heading = [&](const std::string& via) {
    return "### All-reduce bandwidth across " + joined(devices) + via +
           "\n\n| size | time | algbw | busbw | check |\n|---:|---:|---:|---:|---|\n";
  };
  std::string md;
  try {
    StrategyOptions options;
    options.devices = devices;
    options.fusion_bytes = sizeof(float);  // every buffer reduced in place: the collective alone
    MirroredStrategy strategy(devices, options);
    md = heading(" (" + strategy.cross_device_ops().name() + ")");
    for (const size_t bytes : sizes) {
      const AllReduceTiming t = time_all_reduce(strategy, devices, bytes / sizeof(float), min_seconds);
      const double algbw = static_cast<double>(bytes) / t.seconds / 1e9;
      char row[192];
      std::snprintf(row, sizeof row, "| %s | %.1f us | %.1f GB/s | %.1f GB/s | %s |\n", mib(bytes).c_str(), t.seconds * 1e6,
                    algbw, algbw * 2.0 * (n - 1) / n,
                    t.wrong ? (std::to_string(t.wrong) + " wrong elements").c_str() : "exact");
      md += row;
      if (t.wrong)
        failures.push_back(CheckRecord{"all_reduce", mib(bytes) + " across " + joined(devices),
                                       std::numeric_limits<double>::infinity(), 0, false,
                                       std::to_string(t.wrong) + " elements differ from the exact sum"});
    }
  } catch (const std::exception& e) {
    failures.push_back(not_measured("all-reduce bandwidth across " + joined(devices), e));
    if (md.empty()) md = heading("");
    md += "\nnot measured: " + table_cell(e.what()) + "\n";
  }
  char note[256];
  std::snprintf(note, sizeof note,
                "\nOne buffer per replica reduced in place, 10 calls between synchronisations, at least %g s per size; "
                "busbw = algbw * 2(n-1)/n (nccl-tests), comparable with the links' bandwidth.\n\n",
                min_seconds);
  return md + note;
}

std::string comm_overlap_table(const std::vector<Device>& devices, const std::string& project, int64_t batch, int warmup,
                               int steps, std::vector<CheckRecord>& failures) {
  std::string md = "### All-reduce hidden behind the backward pass, " + project + " batch " + std::to_string(batch) +
                   " across " + joined(devices) +
                   "\n\n| bucket | all-reduce per step | hidden | share hidden |\n|---:|---:|---:|---:|\n";
  for (const size_t fusion : {size_t{4} << 20, size_t{256} << 10}) {
    try {
      RunConfig c = mirrored(example_for_speed(project, devices.front(), warmup + steps), devices);
      c.training.batch_size = batch;
      c.strategy.fusion_bytes = fusion;
      std::vector<trace::Span> spans;
      train(c, &spans);
      double comm = 0, hidden = 0;
      int counted = 0;
      for (const trace::StepBreakdown& b : trace::summarize_steps(spans)) {
        if (b.step < warmup) continue;
        ++counted;
        hidden += b.comm_hidden_us;
      }
      for (const trace::Span& s : spans)
        if (s.step >= warmup && s.lane.kind == trace::LaneKind::CommStream) comm += s.duration_us;
      char row[192];
      if (comm > 0)
        std::snprintf(row, sizeof row, "| %s | %.1f us | %.1f us | %.0f%% |\n", mib(fusion).c_str(), comm / counted,
                      hidden / counted, 100 * hidden / comm);
      else std::snprintf(row, sizeof row, "| %s | no communication-stream spans | | |\n", mib(fusion).c_str());
      md += row;
    } catch (const std::exception& e) {
      failures.push_back(not_measured("all-reduce overlap, bucket " + mib(fusion), e));
      md += "| " + mib(fusion) + " | not measured: " + table_cell(e.what()) + " | | |\n";
    }
  }
  return md + "\nFrom the step timeline (--trace) after " + std::to_string(warmup) +
         " warm-up steps: the all-reduce spans of each replica's communication stream, and the part of them that ran "
         "while the same replica's device ran its forward or backward pass. Only cross-device ops with a "
         "stream of their own (NCCL) overlap; the device-memory reduce runs in the replicas' streams.\n\n";
}

std::string scaling_table(const std::vector<Device>& devices, const std::vector<std::pair<std::string, int64_t>>& runs,
                          int warmup, int steps, std::vector<CheckRecord>& failures) {
  std::string md = "### Mirrored over " + joined(devices) +
                   " against one_device, same global batch\n\n| model | batch | one_device samples/s | mirrored | "
                   "mirrored / one |\n|---|---:|---:|---:|---:|\n";
  for (const auto& [project, batch] : runs) {
    try {
      const double one = measure_throughput({devices.front()}, project, batch, warmup, steps).samples_per_sec;
      const double all = measure_throughput(devices, project, batch, warmup, steps).samples_per_sec;
      char row[192];
      std::snprintf(row, sizeof row, "| %s | %lld | %.0f | %.0f | %.2f |\n", project.c_str(), static_cast<long long>(batch),
                    one, all, all / one);
      md += row;
    } catch (const std::exception& e) {
      failures.push_back(not_measured("scaling, " + project, e));
      md += "| " + project + " | " + std::to_string(batch) + " | not measured: " + table_cell(e.what()) + " | | |\n";
    }
  }
  return md + "\n";
}

}  // namespace strata::gpu_check
