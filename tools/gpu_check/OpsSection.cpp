#include "OpsSection.h"

#include "BackendComparison.h"

namespace strata::gpu_check {

std::vector<CheckRecord> OpsSection::run(const SectionContext& context) {
  return BackendComparison(context.device, context.seed, context.on_record).run();
}

}  // namespace strata::gpu_check
