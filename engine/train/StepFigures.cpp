#include "train/StepFigures.h"

#include <cstring>

#include "core/Error.h"

namespace strata {

namespace {
constexpr size_t kReplicaDoubles = sizeof(StepFigures::Replica) / sizeof(double);
constexpr size_t kWorkerDoubles = sizeof(StepFigures::Worker) / sizeof(double);
}  // namespace

std::vector<double> StepFigures::pack() const {
  std::vector<double> out(replicas.size() * kReplicaDoubles + kWorkerDoubles);
  if (!replicas.empty()) std::memcpy(out.data(), replicas.data(), replicas.size() * sizeof(Replica));
  std::memcpy(out.data() + replicas.size() * kReplicaDoubles, &worker, sizeof worker);
  return out;
}

std::vector<StepFigures> StepFigures::unpack_all(const std::vector<double>& gathered, int replicas) {
  const size_t L = static_cast<size_t>(replicas), stride = L * kReplicaDoubles + kWorkerDoubles;
  if (gathered.size() % stride != 0)
    throw runtime_error("step figures: " + std::to_string(gathered.size()) + " values are not whole workers of " +
                        std::to_string(L) + " replicas");
  std::vector<StepFigures> out(gathered.size() / stride);
  for (size_t w = 0; w < out.size(); ++w) {
    const double* v = gathered.data() + w * stride;
    out[w].replicas.resize(L);
    // void*: trivially copyable (asserted), though not trivial to construct.
    if (L) std::memcpy(static_cast<void*>(out[w].replicas.data()), v, L * sizeof(Replica));
    std::memcpy(static_cast<void*>(&out[w].worker), v + L * kReplicaDoubles, sizeof(Worker));
  }
  return out;
}

}  // namespace strata
