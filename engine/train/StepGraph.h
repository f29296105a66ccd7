#pragma once
// The whole training step recorded once as a device graph and replayed for
// every later step of the same shapes, as PyTorch's CUDA-graph capture: the
// forward and backward passes, the loss, the reduction among replicas on the
// device, the optimizer update and the step's figures become one launch
// instead of hundreds, which is what a small model on a fast GPU is bound by.
//
// A shape is captured when it comes a second time in a row (the first step creates the
// optimizer's slots and every other lazily made buffer eagerly, and the
// capture must not allocate memory that outlives it). The batch is copied
// into the graph's own input buffers before each replay. A partial last
// batch has another shape and runs eagerly. Replays do not run host code,
// so host-side counters are advanced by the `replayed` callback.
//
// Used when every replica of the process is on the same device and its
// backend can capture (CUDA, sim): one_device, or mirrored replicas sharing
// a GPU. Anything that reads device memory through a pointer the graph
// holds must keep that memory where it is (the optimizer's learning-rate
// and step scalars, dropout's call counters, the loss scale do).
//
// A traced run's device lanes are timing marks captured into the graph. A
// shape then has up to three graphs: one without marks, for the steps the
// schedule leaves unmarked (DeviceLaneSchedule), and two with, replayed in
// turn for marked steps: a graph's marks are its own events, so step k's
// stay readable while step k + 1 runs on the other graph, and tracing keeps
// one step in flight instead of waiting for each step's marks.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/DeviceMemory.h"
#include "data/Batch.h"
#include "distribute/PerReplica.h"

namespace strata {

class ReplicaContext;
class Strategy;

class StepGraph {
public:
  // Queues one replica's step on its device, its figures into `stats`
  // (step_stats(): loss, correct count, label error flag), reading nothing back.
  using Enqueue = std::function<void(ReplicaContext&, const Batch&, Tensor& stats)>;

  // Why the steps of a run with `strategy` cannot be captured; empty when they can.
  static std::string unsupported_reason(const Strategy& strategy);

  StepGraph(Strategy& strategy, Enqueue enqueue, std::function<void()> replayed);

  // Runs this step as a graph (capturing it first when its shape comes the
  // second time, or the first time it is `marked` or not) and returns each
  // replica's stats tensor to read; nullopt when the step must run eagerly.
  // `marked`: the step's device lanes are timed (the enqueue records the
  // marks when it is called to capture such a graph).
  std::optional<std::vector<Tensor>> run(const PerReplica<Batch>& inputs, bool marked = false);
  // How many times a step was captured (a new shape replaces the graphs).
  int captures() const { return captures_; }
  // Whether the last run() captured the first graph of a new shape.
  bool captured_new_shape() const { return new_shape_; }
  // Which of the two marked graphs the last run() captured or replayed (0 or
  // 1); -1 when it ran the graph without marks.
  int marked_graph() const { return last_ == kPlain ? -1 : last_ - 1; }
  const Device& device() const { return device_; }

private:
  using Key = std::vector<std::vector<int64_t>>;
  static constexpr int kPlain = 0;  // graphs_[0]: no marks; 1 and 2: marked, in turn
  static Key key_of(const PerReplica<Batch>& inputs);
  // Captures graph `slot` of the current shape.
  void capture(const PerReplica<Batch>& inputs, int slot);
  // A new shape: the old graphs go, and the buffers they pointed into.
  void start_shape(const PerReplica<Batch>& inputs);
  void copy_inputs(const PerReplica<Batch>& inputs);

  Strategy& strategy_;
  Enqueue enqueue_;
  std::function<void()> replayed_;
  Device device_;
  Key seen_, captured_key_;
  std::vector<Batch> inputs_;   // the graph's input buffers, one batch per replica
  std::vector<Tensor> stats_;   // the graph's outputs, one per replica
  GraphPtr graphs_[3];          // the current shape's (null until captured); all share inputs_ and stats_
  int last_ = kPlain;
  int captures_ = 0;
  bool new_shape_ = false;
};

}  // namespace strata
