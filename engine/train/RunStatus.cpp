#include "train/RunStatus.h"

#include <array>
#include <utility>

#include "core/Error.h"

namespace strata {

namespace {
constexpr std::array<std::pair<RunStatus, const char*>, 3> kStatus{
    {{RunStatus::Completed, "completed"}, {RunStatus::Stopped, "stopped"}, {RunStatus::Failed, "failed"}}};
constexpr std::array<std::pair<FailureKind, const char*>, 7> kFailure{
    {{FailureKind::None, ""},
     {FailureKind::BadInput, "bad_input"},
     {FailureKind::Diverged, "diverged"},
     {FailureKind::WorkerLost, "worker_lost"},
     {FailureKind::ServerFailed, "server_failed"},
     {FailureKind::OutOfDeviceMemory, "out_of_device_memory"},
     {FailureKind::Internal, "internal"}}};
}  // namespace

const char* status_name(RunStatus status) {
  for (auto& [s, n] : kStatus)
    if (s == status) return n;
  return "failed";
}

std::optional<RunStatus> status_from_name(const std::string& name) {
  for (auto& [s, n] : kStatus)
    if (name == n) return s;
  return std::nullopt;
}

const char* failure_name(FailureKind kind) {
  for (auto& [k, n] : kFailure)
    if (k == kind) return n;
  return "internal";
}

FailureKind failure_kind_of(const std::exception& e) {
  const auto* error = dynamic_cast<const Error*>(&e);
  if (!error) return FailureKind::Internal;
  switch (error->kind()) {
    case ErrorKind::BadInput: return FailureKind::BadInput;
    case ErrorKind::WorkerLost: return FailureKind::WorkerLost;
    case ErrorKind::ServerFailed: return FailureKind::ServerFailed;
    case ErrorKind::DeviceMemory: return FailureKind::OutOfDeviceMemory;
    case ErrorKind::Runtime:
    case ErrorKind::Aborted: break;
  }
  return FailureKind::Internal;
}

std::optional<FailureKind> failure_from_name(const std::string& name) {
  for (auto& [k, n] : kFailure)
    if (name == n && k != FailureKind::None) return k;
  return std::nullopt;
}

}  // namespace strata
