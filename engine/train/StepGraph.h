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
// With two graphs per shape (a traced run) the steps alternate between two
// captures of the same step. A graph's timing marks are its own events, so
// step k's stay readable while step k + 1 runs on the other graph: tracing
// keeps one step in flight instead of waiting for each step's marks.
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

  // `graphs_per_shape`: 1, or 2 to alternate (above).
  StepGraph(Strategy& strategy, Enqueue enqueue, std::function<void()> replayed, int graphs_per_shape = 1);

  // Runs this step as a graph (capturing it first when its shape comes the
  // second time) and returns each replica's stats tensor to read; nullopt
  // when the step must run eagerly.
  std::optional<std::vector<Tensor>> run(const PerReplica<Batch>& inputs);
  // How many times a step was captured (a new shape replaces the graphs).
  int captures() const { return captures_; }
  // Which of the shape's graphs the last run() captured or replayed (0 or 1).
  int last_graph() const { return last_; }
  const Device& device() const { return device_; }

private:
  using Key = std::vector<std::vector<int64_t>>;
  static Key key_of(const PerReplica<Batch>& inputs);
  // Captures graph `slot` of this shape; slot 0 is a new shape's first.
  void capture(const PerReplica<Batch>& inputs, int slot);
  void copy_inputs(const PerReplica<Batch>& inputs);

  Strategy& strategy_;
  Enqueue enqueue_;
  std::function<void()> replayed_;
  Device device_;
  Key seen_, captured_key_;
  std::vector<Batch> inputs_;   // the graph's input buffers, one batch per replica
  std::vector<Tensor> stats_;   // the graph's outputs, one per replica
  int per_shape_;
  GraphPtr graphs_[2];  // the current shape's; both share inputs_ and stats_
  int captured_ = 0;    // how many of them are captured
  int last_ = 0;
  int captures_ = 0;
};

}  // namespace strata
