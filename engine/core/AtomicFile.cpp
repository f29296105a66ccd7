#include "core/AtomicFile.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "core/Error.h"

namespace strata {

void write_file_atomically(const std::string& path, const std::string& contents) {
  std::random_device rd;
  const std::string tmp = path + ".tmp-" + std::to_string(rd() % 1000000);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw bad_input(path + ": cannot write (" + std::strerror(errno) + ")");
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw bad_input(path + ": write failed (" + why + "); the previous file is unchanged");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  // fsync before rename: after a crash the name points at either the old
  // file or the complete new one, never at a short one. The descriptor is
  // closed whatever fsync says (a failed fsync must not leak it).
  const int synced = ::fsync(fd);
  const int sync_errno = errno;
  const int closed = ::close(fd);
  const int close_errno = errno;
  if (synced != 0 || closed != 0) {
    ::unlink(tmp.c_str());
    throw bad_input(path + ": could not flush to disk (" + std::strerror(synced != 0 ? sync_errno : close_errno) +
                    "); the previous file is unchanged");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw bad_input(path + ": cannot replace (" + why + "); the previous file is unchanged");
  }
}

}  // namespace strata
