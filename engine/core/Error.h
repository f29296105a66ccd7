#pragma once
// One exception type crosses module boundaries (docs/architecture.md §6). It carries a
// category so front ends can map it to an exit code without parsing text:
// bad input (files, project fields, devices) is the user's to fix (exit 2),
// everything else is a training failure (exit 1), of a kind a front end can
// name (a lost worker, a failed parameter server, a device out of memory)
// without parsing the message.
#include <stdexcept>
#include <string>

namespace strata {

enum class ErrorKind {
  BadInput,
  Runtime,
  Aborted,
  WorkerLost,
  ServerFailed,
  // An accelerator's memory could not hold an allocation (or a captured
  // step's buffers). Typed because callers recover from it where they can
  // (a convolution way or a workspace that does not fit is passed over) and
  // front ends name it: the remedy, a smaller batch or model, is the user's.
  DeviceMemory,
};

class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

private:
  ErrorKind kind_;
};

// Convenience constructors so call sites read as what went wrong.
inline Error bad_input(const std::string& message) { return Error(ErrorKind::BadInput, message); }
inline Error runtime_error(const std::string& message) { return Error(ErrorKind::Runtime, message); }
inline Error worker_lost(const std::string& message) { return Error(ErrorKind::WorkerLost, message); }
inline Error server_failed(const std::string& message) { return Error(ErrorKind::ServerFailed, message); }
// `facts`: what was asked and what the device had; the remedy, which every
// device's message ends with, is added here.
inline Error device_memory_exhausted(const std::string& facts, const std::string& device) {
  return Error(ErrorKind::DeviceMemory, facts + ". Use a smaller batch or model, or fewer replicas on " + device);
}

// Whether `e` is an accelerator running out of memory (by kind, never by text).
inline bool is_device_memory_exhausted(const std::exception& e) {
  const auto* error = dynamic_cast<const Error*>(&e);
  return error && error->kind() == ErrorKind::DeviceMemory;
}

}  // namespace strata
