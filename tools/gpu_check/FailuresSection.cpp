#include "FailuresSection.h"

#include <chrono>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#include "TrainingRun.h"
#include "train/Trainer.h"

namespace strata::gpu_check {

namespace {

struct Ended {
  FinishedEvent finished;
  bool captured = false;  // the run captured its step as a graph
};

// Trains `c` on a thread of its own for at most `limit` seconds: a hang is
// the case's failure, not the check's. Empty when the run did not end; its
// thread is then left inside the engine (left_work_running). Rethrows what
// the run threw.
std::optional<Ended> run_within(const RunConfig& c, double limit) {
  auto outcome = std::make_shared<std::promise<Ended>>();
  std::future<Ended> ended = outcome->get_future();
  std::thread run([c, outcome] {
    try {
      Ended e;
      {
        // Ended before the outcome is given: its end (the step graph's,
        // then the communicators') is where a hang would be.
        Collector events;
        Trainer trainer(c, events);
        e.finished = trainer.run();
        e.captured = events.captured;
      }
      outcome->set_value(e);
    } catch (...) {
      outcome->set_exception(std::current_exception());
    }
  });
  if (ended.wait_for(std::chrono::duration<double>(limit)) != std::future_status::ready) {
    run.detach();
    return std::nullopt;
  }
  run.join();
  return ended.get();
}

CheckRecord failed(CheckRecord r, const std::string& why) {
  r.passed = false;
  r.max_error = std::numeric_limits<double>::infinity();
  r.detail = why;
  return r;
}

// `c` run within `limit`, and judged: `want` is the failure message it
// must end with, empty for a run that must complete. A captured step graph
// is required either way: the case is about collectives a graph holds.
CheckRecord judged(const RunConfig& c, double limit, const std::string& shape, const std::string& want, bool& hung) {
  CheckRecord r{"failures", shape, 0, 0, true, ""};
  std::optional<Ended> e;
  try {
    e = run_within(c, limit);
  } catch (const std::exception& ex) {
    return failed(r, std::string("the run threw instead of ending: ") + ex.what());
  }
  if (!e) {
    hung = true;
    return failed(r, "the run did not end within " + std::to_string(static_cast<int>(limit)) + " s");
  }
  const FinishedEvent& fin = e->finished;
  const RunStatus expected = want.empty() ? RunStatus::Completed : RunStatus::Failed;
  if (fin.status != expected || fin.message.find(want) == std::string::npos)
    return failed(r, std::string("ended ") + status_name(fin.status) + ", not " + status_name(expected) +
                         (want.empty() ? "" : " with '" + want + "'") + ": " + fin.message);
  if (!e->captured) return failed(r, "the step was never captured as a graph: nothing was checked beside one");
  r.detail = fin.message;
  return r;
}

}  // namespace

// A replica failing while its peers are inside the step's collectives,
// after the step graph captured them (RunConfig::fail_replica): the run
// fails naming the replica within the limit, and the device trains the next
// run. On a GPU the four replicas reduce through NCCL where it loads, on a
// one-GPU communicator. NcclAllReduce::fail leaves a communicator a graph
// holds to the run's end (NCCL's abort of it would wait for that graph),
// but NCCL runs a one-rank communicator's all-reduce without a kernel or a
// plan of its own, so on one GPU this case checks the failure's way out of
// the barriers and the step graph, not that: only several GPUs could.
std::vector<CheckRecord> FailuresSection::run(const SectionContext& context) {
  const Device& device = context.device;
  RunConfig c = example_mlp(device, 12, "sgd");
  c.strategy.name = "mirrored";
  c.strategy.devices.assign(4, device.str());
  c.training.step_graphs = true;  // whatever STRATA_STEP_GRAPHS says
  // Without NCCL the same case through device memory.
  const bool nccl = nccl_missing(device, 4).empty();
  if (nccl) c.strategy.cross_device_ops = "nccl";
  const std::string via = nccl ? "NCCL" : "device memory";
  c.strategy.fail_replica = 1;
  c.strategy.fail_replica_step = 8;
  std::vector<CheckRecord> out;
  // Each record is announced as it comes: a later hang must not take it.
  announce(out,
           {judged(c, limit_, "mirrored x4 on " + device.str() + " (" + via + "), step graphs, replica 1 fails at step 8",
                   "replica 1 (" + device.str() + ") failed (injected at step 8)", hung_)},
           context);
  if (!out.back().passed) return out;
  c.strategy.fail_replica = -1;
  announce(out, {judged(c, limit_, "after the failed run: the same 4 replicas train 12 steps on " + device.str(), "", hung_)},
           context);
  return out;
}

}  // namespace strata::gpu_check
