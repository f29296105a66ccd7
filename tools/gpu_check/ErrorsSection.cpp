#include "ErrorsSection.h"

#include <functional>
#include <limits>

#include "TrainingRun.h"
#include "backend/Backend.h"
#include "core/Tensor.h"
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
  return out;
}

}  // namespace strata::gpu_check
