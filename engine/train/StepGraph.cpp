#include "train/StepGraph.h"

#include "backend/Backend.h"
#include "core/Error.h"
#include "distribute/Strategy.h"
#include "train/StepReadback.h"

namespace strata {

namespace {
// The advice a failed capture carries, whichever part of it failed: the
// step's enqueueing or ending the capture (memory made during it still in
// use, work the device refused inside it).
Error capture_failed(const Error& e) {
  return Error(e.kind(), "capturing the training step as a device graph failed (run with graphs off: --no-graphs): " +
                             std::string(e.what()));
}
}  // namespace

std::string StepGraph::unsupported_reason(const Strategy& strategy) {
  if (strategy.cluster().size() > 1) return "the replicas of several workers exchange gradients through the host";
  const Device d = strategy.devices().front();
  for (const Device& other : strategy.devices())
    if (other != d) return "the replicas are on different devices";
  if (d.is_host() || !backend_for(d).supports_capture()) return d.str() + " runs each operation as it is called";
  return {};
}

StepGraph::StepGraph(Strategy& strategy, Enqueue enqueue, std::function<void()> replayed)
    : strategy_(strategy),
      enqueue_(std::move(enqueue)),
      replayed_(std::move(replayed)),
      device_(strategy.devices().front()) {}

StepGraph::Key StepGraph::key_of(const PerReplica<Batch>& inputs) {
  Key k;
  for (const Batch& b : inputs) {
    k.push_back(b.features.shape().dims());
    k.push_back(b.labels.shape().dims());
    k.push_back({b.global_batch_size, static_cast<int64_t>(b.features.dtype())});
  }
  return k;
}

void StepGraph::copy_inputs(const PerReplica<Batch>& inputs) {
  for (int r = 0; r < inputs.num_replicas(); ++r) {
    inputs_[static_cast<size_t>(r)].features.copy_from(inputs[r].features);
    inputs_[static_cast<size_t>(r)].labels.copy_from(inputs[r].labels);
  }
}

void StepGraph::start_shape(const PerReplica<Batch>& inputs) {
  for (GraphPtr& g : graphs_) g.reset();
  inputs_.clear();
  stats_.clear();
  for (const Batch& b : inputs) {
    inputs_.push_back(Batch{Tensor::empty(b.features.shape(), b.features.dtype(), device_),
                            Tensor::empty(b.labels.shape(), b.labels.dtype(), device_), b.global_batch_size});
    stats_.push_back(step_stats(device_));
  }
  captured_key_ = key_of(inputs);
  new_shape_ = true;
}

void StepGraph::capture(const PerReplica<Batch>& inputs, int slot) {
  copy_inputs(inputs);
  Backend& be = backend_for(device_);
  be.begin_capture();
  try {
    strategy_.run_replicas([&](ReplicaContext& ctx) {
      const auto r = static_cast<size_t>(ctx.local_replica_id());
      enqueue_(ctx, inputs_[r], stats_[r]);
    });
  } catch (...) {
    // Whatever went wrong, the capture is ended: a stream left capturing
    // refuses every later copy and synchronisation of the process.
    try {
      be.end_capture();
    } catch (...) {
      // The capture is being abandoned; its own error says less than the first.
    }
    try {
      throw;
    } catch (const Error& e) {
      throw capture_failed(e);
    }
  }
  try {
    graphs_[slot] = be.end_capture();
  } catch (const Error& e) {
    throw capture_failed(e);
  }
  ++captures_;
}

std::optional<std::vector<Tensor>> StepGraph::run(const PerReplica<Batch>& inputs, bool marked) {
  new_shape_ = false;
  const Key key = key_of(inputs);
  // seen_ is the previous step's shape: a shape is captured only when two
  // steps in a row have it, so an epoch's partial last batch (one step,
  // after replays of the full one) never replaces the full batch's graph.
  const bool again = key == seen_;
  seen_ = key;
  if (key != captured_key_) {
    if (!again) return std::nullopt;
    start_shape(inputs);
  }
  // Marked steps take the two marked graphs in turn (the header says why).
  const int slot = !marked ? kPlain : last_ == 1 ? 2 : 1;
  Backend& be = backend_for(device_);
  last_ = slot;
  if (graphs_[slot]) {
    copy_inputs(inputs);
    be.replay(graphs_[slot]);
    replayed_();
    return stats_;
  }
  // The shape's first step of this kind: record it, then run the recording
  // (the capture itself computed nothing, and ran the step's host code once).
  capture(inputs, slot);
  be.replay(graphs_[slot]);
  return stats_;
}

}  // namespace strata
