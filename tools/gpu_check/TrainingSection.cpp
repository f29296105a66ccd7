#include "TrainingSection.h"

#include "TrainingChecks.h"

namespace strata::gpu_check {

std::vector<CheckRecord> TrainingSection::run(const SectionContext& context) {
  std::vector<CheckRecord> out;
  announce(out, check_one_step(context.device), context);
  announce(out, check_trajectory(context.device), context);
  announce(out, check_graph_replay(context.device), context);
  announce(out, check_gradient_branches(context.device), context);
  announce(out, check_mirrored_pair(context.device), context);
  announce(out, check_shared_device(context.device), context);
  announce(out, check_parameter_server(context.device), context);
  announce(out, check_device_timeline(context.device), context);
  return out;
}

std::vector<CheckRecord> MnistSection::run(const SectionContext& context) {
  std::vector<CheckRecord> out;
  announce(out, check_fashion_mnist(context.device), context);
  announce(out, check_fashion_cnn(context.device), context);
  return out;
}

}  // namespace strata::gpu_check
