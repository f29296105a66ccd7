#pragma once
// What every fuzz target shares: the input as a file (the readers take
// paths, as users hand them files) and the rule a target enforces: bad input
// must end in strata::Error (a message naming the file and the reason); any
// other exception, a crash or a sanitizer report is a finding.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/Error.h"

namespace strata::fuzz {

// An anonymous in-memory file holding `data`, reachable by path
// (/proc/self/fd/N) for the lifetime of this object.
class MemoryFile {
public:
  MemoryFile(const uint8_t* data, size_t size) : fd_(::memfd_create("strata-fuzz", 0)) {
    if (fd_ < 0) std::abort();
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
  }
  ~MemoryFile() { ::close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

private:
  int fd_;
};

// Runs `body`; a strata::Error is the expected end of bad input.
template <typename Body>
int expect_clean(Body body) {
  try {
    body();
  } catch (const Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding: an exception other than strata::Error escaped: %s\n", e.what());
    std::abort();
  }
  return 0;
}

}  // namespace strata::fuzz
