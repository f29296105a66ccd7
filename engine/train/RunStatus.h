#pragma once
// How a run ended, and for a failed one what kind of failure: types, so
// front ends decide by value (a diverged run, a lost worker) instead of
// comparing strings or searching the message. The message says the details.
#include <exception>
#include <optional>
#include <string>

namespace strata {

enum class RunStatus { Completed, Stopped, Failed };

enum class FailureKind {
  None,               // the run did not fail
  BadInput,           // the project, data or a setting is wrong (fix it and start again)
  Diverged,           // the loss became NaN or infinite
  WorkerLost,         // a worker (rank or parameter-server worker) died or went silent
  ServerFailed,       // a parameter server failed
  OutOfDeviceMemory,  // an accelerator's memory could not hold the run (a smaller batch or model may fit)
  Internal,           // anything else: a bug to report
};

// "completed", "stopped", "failed" (the JSONL schema's words).
const char* status_name(RunStatus status);
std::optional<RunStatus> status_from_name(const std::string& name);
// "bad_input", "diverged", "worker_lost", "server_failed", "out_of_device_memory",
// "internal"; "" for None.
const char* failure_name(FailureKind kind);
std::optional<FailureKind> failure_from_name(const std::string& name);
// The kind of failure an exception stands for (by its ErrorKind; Internal
// for anything that is not an Error).
FailureKind failure_kind_of(const std::exception& e);

}  // namespace strata
