#include "FailuresSection.h"

#include <chrono>
#include <future>
#include <limits>
#include <memory>
#include <thread>

#include "TrainingRun.h"
#include "train/Trainer.h"

namespace strata::gpu_check {

namespace {

// A replica failing while its peers are inside the step's collectives,
// after the step graph captured them (RunConfig::fail_replica): the run
// fails naming the replica within `limit` seconds, and the device trains the
// next run. On a GPU the four replicas reduce through NCCL where it loads,
// whose communicator the captured graph holds: aborting it would wait for
// that graph's end, which comes only after the run's (NcclAllReduce::fail
// leaves such a communicator to the end since 2026-12-06; a hang before,
// by a reading of NCCL's source, not yet seen on a GPU).
std::vector<CheckRecord> failing_replica(const Device& device, double limit, bool& hung) {
  RunConfig c = example_mlp(device, 12, "sgd");
  c.strategy.name = "mirrored";
  c.strategy.devices.assign(4, device.str());
  // Without NCCL the same case through device memory.
  const bool nccl = nccl_missing(device, 4).empty();
  if (nccl) c.strategy.cross_device_ops = "nccl";
  const std::string via = nccl ? "NCCL" : "device memory";
  c.strategy.fail_replica = 1;
  c.strategy.fail_replica_step = 8;
  const std::string shape = "mirrored x4 on " + device.str() + " (" + via + "), step graphs, replica 1 fails at step 8";
  CheckRecord r{"failures", shape, 0, 0, true, ""};
  // On a thread of its own: a hang is this case's failure, not the check's.
  auto outcome = std::make_shared<std::promise<FinishedEvent>>();
  std::future<FinishedEvent> finished = outcome->get_future();
  std::thread run([c, outcome] {
    try {
      FinishedEvent fin;
      {
        // Ended before the outcome is given: its end (the step graph's,
        // then the communicators') is where a hang would be.
        Collector events;
        Trainer trainer(c, events);
        fin = trainer.run();
      }
      outcome->set_value(fin);
    } catch (...) {
      outcome->set_exception(std::current_exception());
    }
  });
  if (finished.wait_for(std::chrono::duration<double>(limit)) != std::future_status::ready) {
    run.detach();  // still inside the engine (left_work_running)
    hung = true;
    r.passed = false;
    r.max_error = std::numeric_limits<double>::infinity();
    r.detail = "the run did not end within " + std::to_string(static_cast<int>(limit)) + " s";
    return {r};
  }
  run.join();
  try {
    const FinishedEvent fin = finished.get();
    r.detail = fin.message;
    const std::string want = "replica 1 (" + device.str() + ") failed (injected at step 8)";
    if (fin.status != RunStatus::Failed || fin.message.find(want) == std::string::npos) {
      r.passed = false;
      r.max_error = std::numeric_limits<double>::infinity();
      r.detail = std::string("ended ") + status_name(fin.status) + ", not failed with '" + want + "': " + fin.message;
    }
  } catch (const std::exception& e) {
    r.passed = false;
    r.max_error = std::numeric_limits<double>::infinity();
    r.detail = std::string("the run threw instead of failing: ") + e.what();
  }
  if (!r.passed) return {r};
  c.strategy.fail_replica = -1;
  const std::string next = "after the failed run: the same 4 replicas train 12 steps on " + device.str();
  return {r, guarded("failures", [&] {
               train(c);
               return std::vector<CheckRecord>{CheckRecord{"failures", next, 0, 0, true, ""}};
             }).front()};
}

}  // namespace

std::vector<CheckRecord> FailuresSection::run(const SectionContext& context) {
  std::vector<CheckRecord> out;
  announce(out, failing_replica(context.device, limit_, hung_), context);
  return out;
}

}  // namespace strata::gpu_check
