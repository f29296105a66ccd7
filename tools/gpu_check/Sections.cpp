#include "Sections.h"

#include "BenchSection.h"
#include "ErrorsSection.h"
#include "FailuresSection.h"
#include "MultiDeviceSection.h"
#include "OpsSection.h"
#include "TrainingSection.h"

namespace strata::gpu_check {

std::vector<std::unique_ptr<CheckSection>> all_sections() {
  std::vector<std::unique_ptr<CheckSection>> out;
  // Cheapest and most basic first: a broken kernel explains later failures.
  out.push_back(std::make_unique<OpsSection>());
  out.push_back(std::make_unique<ErrorsSection>());
  out.push_back(std::make_unique<TrainingSection>());
  out.push_back(std::make_unique<MultiDeviceSection>());
  out.push_back(std::make_unique<MnistSection>());
  out.push_back(std::make_unique<BenchSection>());
  out.push_back(std::make_unique<BenchSection>(BenchSection::Variant::Tf32));
  out.push_back(std::make_unique<BenchSection>(BenchSection::Variant::NonDeterministic));
  // Last: a run it leaves hanging could hold the device (FailuresSection.h).
  out.push_back(std::make_unique<FailuresSection>());
  return out;
}

}  // namespace strata::gpu_check
