#include "ErrorsSection.h"

#include <chrono>
#include <functional>
#include <future>
#include <limits>
#include <thread>

#include "TrainingRun.h"
#include "backend/Backend.h"
#include "core/Tensor.h"
#include "distribute/collectives/CrossDeviceOps.h"
#include "train/Trainer.h"

namespace strata::gpu_check {

namespace {

// Runs `attempt`, which must throw an Error of `kind` whose message contains
// every one of `needles`; the record says what came instead.
CheckRecord expect_error(const std::string& shape, ErrorKind kind, const std::vector<std::string>& needles,
                         const std::function<void()>& attempt) {
  CheckRecord r{"errors", shape, 0, 0, true, ""};
  auto fail = [&](const std::string& why) {
    r.passed = false;
    r.max_error = std::numeric_limits<double>::infinity();
    r.detail = why;
  };
  try {
    attempt();
    fail("no error");
  } catch (const Error& e) {
    r.detail = e.what();
    if (e.kind() != kind) fail(std::string("another kind of error: ") + e.what());
    for (const std::string& n : needles)
      if (r.passed && r.detail.find(n) == std::string::npos) fail("the message does not say '" + n + "': " + e.what());
  } catch (const std::exception& e) {
    fail(std::string("not an engine error: ") + e.what());
  }
  return r;
}

// The index one past the last device of `device`'s kind.
int missing_index(const Device& device) {
  return device.kind == DeviceKind::Sim ? kSimDeviceCount : static_cast<int>(gpu_inventory().gpus.size());
}

size_t memory_bytes(const Device& device) {
  if (device.kind == DeviceKind::Sim) return sim_device_memory_bytes();
  for (const DeviceInfo& gpu : gpu_inventory().gpus)
    if (gpu.device == device) return static_cast<size_t>(gpu.memory_bytes);
  throw runtime_error(device.str() + " is not in the list of GPUs");
}

// A replica failing while its peers are inside the step's collectives,
// after the step graph captured them (RunConfig::fail_replica): the run
// fails naming the replica within `limit` seconds, and the device trains the
// next run. On a GPU the four replicas reduce through NCCL where it loads,
// whose communicator the captured graph holds: aborting it would wait for
// that graph's end, which comes only after the run's (a hang before
// 2026-12-06).
std::vector<CheckRecord> failing_replica(const Device& device, double limit) {
  RunConfig c = example_mlp(device, 12, "sgd");
  c.strategy.name = "mirrored";
  c.strategy.devices.assign(4, device.str());
  std::string via = "device memory";
  if (device.kind == DeviceKind::Gpu) try {
      select_cross_device_ops(std::vector<Device>(4, device), "nccl");
      c.strategy.cross_device_ops = "nccl";
      via = "NCCL";
    } catch (const std::exception&) {
      // Without NCCL the same case through device memory.
    }
  c.strategy.fail_replica = 1;
  c.strategy.fail_replica_step = 8;
  const std::string shape = "mirrored x4 on " + device.str() + " (" + via + "), step graphs, replica 1 fails at step 8";
  CheckRecord r{"errors", shape, 0, 0, true, ""};
  // On a thread of its own: a hang is this case's failure, not the check's.
  auto outcome = std::make_shared<std::promise<FinishedEvent>>();
  std::future<FinishedEvent> finished = outcome->get_future();
  std::thread run([c, outcome] {
    try {
      Collector events;
      Trainer trainer(c, events);
      outcome->set_value(trainer.run());
    } catch (...) {
      outcome->set_exception(std::current_exception());
    }
  });
  if (finished.wait_for(std::chrono::duration<double>(limit)) != std::future_status::ready) {
    run.detach();  // still inside the engine: the next sections may not run either
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
  std::vector<CheckRecord> out{r};
  if (!r.passed) return out;
  c.strategy.fail_replica = -1;
  for (CheckRecord& next : guarded("errors", [&] {
         train(c);
         return std::vector<CheckRecord>{CheckRecord{"errors",
                                                     "after the failed run: the same " +
                                                         std::to_string(c.strategy.devices.size()) +
                                                         " replicas train 12 steps on " + device.str(),
                                                     0, 0, true, ""}};
       }))
    out.push_back(next);
  return out;
}

}  // namespace

std::vector<CheckRecord> ErrorsSection::run(const SectionContext& context) {
  const Device& device = context.device;
  std::vector<CheckRecord> out;
  const Device missing{device.kind, missing_index(device)};

  announce(out,
           {expect_error("tensor on " + missing.str() + ", which this machine does not have", ErrorKind::BadInput,
                         {missing.str(), "does not exist"}, [&] { Tensor::zeros(Shape{4}, missing); })},
           context);

  announce(out,
           {expect_error("training run on " + missing.str(), ErrorKind::BadInput, {missing.str(), "does not exist"},
                         [&] {
                           Collector events;
                           Trainer trainer(example_mlp(missing, 1, "sgd"), events);
                           trainer.prepare();
                         })},
           context);

  // More than the device has: refused with the size and what is free, and
  // nothing left behind (the next allocation and kernels work).
  const size_t too_much = memory_bytes(device) + (size_t{1} << 30);
  announce(out,
           {expect_error("allocating " + std::to_string(too_much >> 20) + " MiB on " + device.str(), ErrorKind::DeviceMemory,
                         {device.str(), "out of device memory"},
                         [&] { Tensor::empty(Shape{static_cast<int64_t>(too_much / sizeof(float))}, device); })},
           context);
  announce(out,
           guarded("errors",
                   [&] {
                     const std::vector<float> values{1, 2, 3, 4};
                     Tensor t = Tensor::from(Shape{4}, values, device);
                     Tensor sum = t.clone();
                     backend_for(device).axpby(4, 1.0f, t.ptr(), 1.0f, sum.ptr());
                     const std::vector<float> got = sum.values();
                     CheckRecord r{"errors",
                                   "after the refused allocation: a copy and a kernel on " + device.str(),
                                   0,
                                   0,
                                   got == std::vector<float>{2, 4, 6, 8},
                                   ""};
                     if (!r.passed) {
                       r.max_error = std::numeric_limits<double>::infinity();
                       r.detail = "x + x gave " + std::to_string(got[0]) + ", " + std::to_string(got[1]) +
                                  ", ... for 1, 2, ...";
                     }
                     return std::vector<CheckRecord>{r};
                   }),
           context);
  announce(out, failing_replica(device, 120), context);
  return out;
}

}  // namespace strata::gpu_check
