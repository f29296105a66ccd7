#include "TrainingSection.h"

#include "TrainingChecks.h"

namespace strata::gpu_check {

namespace {
void append(std::vector<CheckRecord>& out, std::vector<CheckRecord> more, const SectionContext& context) {
  for (auto& r : more) {
    if (context.on_record) context.on_record(r);
    out.push_back(std::move(r));
  }
}
}  // namespace

std::vector<CheckRecord> TrainingSection::run(const SectionContext& context) {
  std::vector<CheckRecord> out;
  append(out, check_one_step(context.device), context);
  append(out, check_trajectory(context.device), context);
  append(out, check_graph_replay(context.device), context);
  append(out, check_mirrored_pair(context.device), context);
  append(out, check_shared_device(context.device), context);
  append(out, check_device_timeline(context.device), context);
  return out;
}

std::vector<CheckRecord> MnistSection::run(const SectionContext& context) {
  std::vector<CheckRecord> out;
  append(out, check_fashion_mnist(context.device), context);
  append(out, check_fashion_cnn(context.device), context);
  return out;
}

}  // namespace strata::gpu_check
