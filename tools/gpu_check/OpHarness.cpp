#include "OpHarness.h"

#include <exception>
#include <limits>

#include "core/Error.h"

namespace strata::gpu_check {

OpHarness::OpHarness(const Device& device, uint64_t seed, Observer observer, Backend* backend)
    : device_(device), backend_(backend), rng_(seed), observer_(std::move(observer)) {
  if (device.is_host())
    throw bad_input("device " + device.str() + " is the host: compare a device (sim:N, gpu:N) against the CPU");
  if (!backend_) backend_ = &backend_for(device);
}

void OpHarness::check(const std::string& op, const std::string& shape, const std::function<void(OpCase&)>& body) {
  std::vector<OpCase::Outcome> outcomes;
  try {
    OpCase c(device_, *backend_, rng_);
    body(c);
    outcomes = c.outcomes();
  } catch (const std::exception& e) {
    // Drain what the failed check queued, so its error cannot resurface at
    // the next check's sync point.
    try {
      backend_->synchronize();
    } catch (const std::exception&) {
    }
    const bool engine = dynamic_cast<const Error*>(&e) != nullptr;
    add({op, shape, std::numeric_limits<double>::infinity(), 0.0, false,
         std::string(engine ? "error: " : "unexpected exception: ") + e.what()});
    return;
  }
  for (auto& o : outcomes) {
    const std::string where = o.output.empty() ? shape : shape + " -> " + o.output;
    add({op, where, o.comparison.max_error, o.tolerance, o.comparison.passed, o.comparison.detail});
  }
}

void OpHarness::add(CheckRecord record) {
  records_.push_back(std::move(record));
  if (observer_) observer_(records_.back());
}

}  // namespace strata::gpu_check
