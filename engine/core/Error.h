#pragma once
// One exception type crosses module boundaries (docs/architecture.md §6). It carries a
// category so front ends can map it to an exit code without parsing text:
// bad input (files, project fields, devices) is the user's to fix (exit 2),
// everything else is a training failure (exit 1), of a kind a front end can
// name (a lost worker, a failed parameter server) without parsing the
// message.
#include <stdexcept>
#include <string>

namespace strata {

enum class ErrorKind { BadInput, Runtime, Aborted, WorkerLost, ServerFailed };

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

}  // namespace strata
