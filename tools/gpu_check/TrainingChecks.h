#pragma once
// The GPU check's training sections: whole runs of the engine on a device
// against the same runs on the CPU (the reference), through the public
// Trainer, on the real Fashion-MNIST files. Each returns check records like
// the op section; none needs a GPU to run (sim devices work too, which is how
// CI tests this code).
#include <optional>
#include <string>
#include <vector>

#include "CheckRecord.h"
#include "core/Device.h"
#include "trace/DeviceLaneSchedule.h"

namespace strata::gpu_check {

// One training step of the example MLP (SGD) on `device` against cpu:0: the
// loss and every weight afterwards.
std::vector<CheckRecord> check_one_step(const Device& device);
// 50 SGD steps: the loss at every step and the final weights follow the CPU's trajectory.
std::vector<CheckRecord> check_trajectory(const Device& device, int steps = 50);
// Mirrored with two replicas on the one device against one_device there, on
// the same global batches: the same weights.
std::vector<CheckRecord> check_mirrored_pair(const Device& device, int steps = 20);
// Four mirrored replicas sharing the one device against one_device (the
// shared-GPU half of mixed placement: a local sum through device memory, then
// the cross-device ops across GPUs). On a GPU the gradients go through NCCL
// (a one-GPU communicator after the local sum), and must give the bits of the
// device-memory all-reduce.
std::vector<CheckRecord> check_shared_device(const Device& device, int steps = 20);
// ParameterServer with its two workers on the device and two servers in host
// memory (the kernels split between them), synchronous (staleness 0): each
// global batch's slice gradients summed and applied once, as mirrored over the
// same two replicas does, so the same losses and weights up to float32
// rounding (the servers' update runs on the CPU). Pulls and pushes copy
// through the device's pinned staging.
std::vector<CheckRecord> check_parameter_server(const Device& device, int steps = 20);
// The example CNN with batch norm and dropout (Adam) for a few steps with each
// step captured as a graph and replayed, against the same steps run op by op
// on the device: the same losses, weights, moving statistics and host-side
// counters (dropout's call counts, the optimizer's step).
std::vector<CheckRecord> check_graph_replay(const Device& device, int steps = 8);
// The example CNN for a few steps with the weight gradients on a second
// stream beside the input gradients (Backend::begin_branch), against the
// same steps in order, op by op and replayed as graphs: the same losses and
// weights, and branches taken (none in order).
std::vector<CheckRecord> check_gradient_branches(const Device& device, int steps = 8);
// The example MLP project as it is (10 epochs, Adam) on `device`: test
// accuracy >= 0.88. (After 5 epochs it is at 0.874 on the CPU as well: the
// project, not the device, sets how far it gets.)
// The step timeline's device lane: with a step graph and device lanes in
// every step, every step (replays included) has the device's own step,
// forward, backward and optimizer spans, timed in its stream, each inside the
// device's step, and the device's steps do not overlap; sampled, only the
// burst's steps have them, and the losses are an untraced run's.
std::vector<CheckRecord> check_device_timeline(const Device& device, int steps = 12);
std::vector<CheckRecord> check_fashion_mnist(const Device& device);

// The TF-tutorial CNN project for 2 epochs on `device` and on the CPU (cpu:0,
// every core): the test accuracy on the device at least the CPU's less 0.005
// (float32 sums in another order take another, equally good, trajectory).
std::vector<CheckRecord> check_fashion_cnn(const Device& device);

// Training-step throughput of an example project ("fashion-mlp",
// "fashion-cnn"; Adam) at one global batch, on one device or mirrored over
// `replicas` (a device may repeat): the median step interval after `warmup`.
struct ThroughputFigure {
  int64_t batch = 0;
  double samples_per_sec = 0, step_us = 0;
  int64_t device_bytes = 0;      // device memory allocated from the system during the run, all devices
  int64_t graph_operations = 0;  // kernels, copies and fills of the first device's captured step
};
ThroughputFigure measure_throughput(const std::vector<Device>& replicas, const std::string& project, int64_t batch,
                                    int warmup = 20, int steps = 200, bool gradient_branches = true);

// Where a replayed step's time goes on `device`: an example project traced
// with device lanes in every step for `steps` steps at `batch`, the median
// over the steps after the first five of the device's whole step and of its
// forward (the loss included), backward and optimizer phases and of the
// rest of the step (gathering its figures: loss and correct count), each
// its own median (microseconds).
struct DevicePhaseTimes {
  double step_us = 0, forward_us = 0, backward_us = 0, optimizer_us = 0, rest_us = 0;
};
DevicePhaseTimes device_phase_times(const Device& device, const std::string& project, int64_t batch, int steps = 40);

// Samples a second of an example project on `device` over `epochs` whole
// epochs (full batches only), untraced or traced with `lanes` as --trace
// --device-lanes does: the mean over every step after the first epoch, the
// steps that follow an epoch's end (its evaluation) left out. A mean, not a
// median: sampled device lanes mark one 0.1 ms step in 125, which no median sees.
double sustained_throughput(const Device& device, const std::string& project, int64_t batch, int epochs,
                            std::optional<trace::DeviceLanes> lanes);

}  // namespace strata::gpu_check
