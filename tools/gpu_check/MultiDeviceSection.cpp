#include "MultiDeviceSection.h"

#include "MultiDeviceChecks.h"

namespace strata::gpu_check {

std::vector<CheckRecord> MultiDeviceSection::run(const SectionContext& context) {
  const std::vector<Device> devices = devices_like(context.device);
  if (devices.size() < 2) {
    appendix_ = "Nothing checked: this machine shows one device of the kind of " + context.device.str() +
                ". The section runs where there are two or more GPUs.\n";
    return {};
  }
  std::vector<CheckRecord> out;
  announce(out, check_mirrored_across(devices), context);
  announce(out, check_mixed_placement(devices), context);
  announce(out, check_synchronized_batch_norm(devices), context);

  // Figures: sized for GPUs; on sim (the test suite's run, CPU kernels)
  // small enough to take seconds.
  const bool gpu = context.device.kind == DeviceKind::Gpu;
  std::vector<CheckRecord> failures;
  appendix_ = bus_bandwidth_table(devices,
                                  gpu ? std::vector<size_t>{1u << 20, 32u << 20, 256u << 20}
                                      : std::vector<size_t>{256u << 10, 1u << 20},
                                  gpu ? 0.5 : 0.05, failures);
  appendix_ += gpu ? comm_overlap_table(devices, "fashion-cnn", 256 * static_cast<int64_t>(devices.size()), 20, 100, failures)
                   : comm_overlap_table(devices, "fashion-mlp", 128, 2, 4, failures);
  appendix_ += gpu ? scaling_table(devices, {{"fashion-mlp", 8192}, {"fashion-cnn", 1024}}, 20, 200, failures)
                   : scaling_table(devices, {{"fashion-mlp", 256}}, 3, 10, failures);
  announce(out, std::move(failures), context);
  return out;
}

}  // namespace strata::gpu_check
