#pragma once
// What the GPU check's whole-run checks share (TrainingChecks, MultiDevice-
// Checks): the example projects as run configurations, one training run's
// outcome (its events, every replica's weights, the host-side state) and the
// comparison of two runs as check records.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "CheckRecord.h"
#include "core/Device.h"
#include "core/Error.h"
#include "trace/Span.h"
#include "train/Events.h"
#include "train/RunConfig.h"

namespace strata::gpu_check {

// resources/examples/<name>.strata on `device` alone (one_device), one epoch
// of at most `steps` steps (0: the whole epoch).
RunConfig example(const std::string& name, const Device& device, int64_t steps);
// The example `name` as above for a comparison of two runs' losses and
// weights: validating on the 10,000 test images would measure nothing there
// (and cost 6 s a CNN run on sim), so 1% of the training images do.
RunConfig example_compared(const std::string& name, const Device& device, int64_t steps);
// The example MLP with `optimizer` ("sgd" gets a larger learning rate, see
// the definition).
RunConfig example_mlp(const Device& device, int64_t steps, const std::string& optimizer);
// The example `name` as the benchmarks train it: the MLP with Adam, any
// other project as it is.
RunConfig example_for_speed(const std::string& name, const Device& device, int64_t steps);

// Whether NCCL serves `replicas` replicas sharing GPU `device` (built in and
// its library loaded); when not, why (empty when it does). Not a GPU: why too.
std::string nccl_missing(const Device& device, int replicas);

// The median of `v` (reordered; not empty).
double median_of(std::vector<double>& v);

class Collector final : public EventSink {
public:
  std::vector<double> losses;
  std::vector<double> step_times;
  std::vector<int64_t> epochs, epoch_steps;  // each step's epoch and its step within it (from 1)
  std::optional<EpochEvent> last_epoch;
  bool captured = false;  // the trainer said it captured the step as a graph
  void emit(const Event& e) override;
};

struct Run {
  Collector events;
  // Every variable's values, per component (replica).
  std::vector<std::vector<std::vector<float>>> weights;
  // Host-side state: every layer's extra state and the optimizer's step.
  std::string host_state;
};

// Trains `config` to the end; throws unless the run completed. With `spans`,
// the run is traced into it (the step timeline's spans, host and device).
Run train(const RunConfig& config, std::vector<trace::Span>* spans = nullptr);

// One record comparing two vectors by the op section's rule (ResultComparison.h).
CheckRecord compare(const std::string& op, const std::string& shape, const std::vector<float>& got,
                    const std::vector<float>& want, double tolerance);
// Every variable of `got` (component `c`) against `want`'s component 0.
void compare_weights(std::vector<CheckRecord>& out, const std::string& op, const Run& got, int c, const Run& want,
                     double tolerance);
std::vector<float> as_floats(const std::vector<double>& v);

// A check's failure to run at all is one failed record with the message.
template <typename Fn>
std::vector<CheckRecord> guarded(const std::string& op, Fn body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return {CheckRecord{op, "run", INFINITY, 0, false, e.what()}};
  }
}

}  // namespace strata::gpu_check
