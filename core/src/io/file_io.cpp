// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <system_error>

#include "attnscope/error.h"

namespace attnscope {

std::string fileErrorMessage(const char* verb, const std::string& path, int errnoValue) {
  // std::generic_category().message is thread-safe, unlike std::strerror.
  return std::string("cannot ") + verb + " " + path + ": " +
         std::generic_category().message(errnoValue);
}

namespace {

[[noreturn]] void throwWriteError(const std::string& path, int errnoValue) {
  throw Error(ErrorKind::Io, fileErrorMessage("write", path, errnoValue));
}

// Opens a fresh temporary file beside `path` (same directory, so rename stays atomic).
// open(O_EXCL) with mode 0666 rather than mkstemp, so the final file gets the usual
// umask-derived permissions instead of mkstemp's 0600.
int openTemporary(const std::string& path, std::string* tmpPath) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto ticks = static_cast<unsigned long long>(
        std::chrono::steady_clock::now().time_since_epoch().count());
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, ".tmp-%ld-%u-%llx", static_cast<long>(::getpid()),
                  counter.fetch_add(1), ticks & 0xffffffULL);
    *tmpPath = path + suffix;
    const int fd = ::open(tmpPath->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

bool writeAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

void writeFileAtomically(const std::string& path, const std::string& bytes) {
  std::string tmpPath;
  const int fd = openTemporary(path, &tmpPath);
  if (fd < 0) throwWriteError(path, errno);

  // fsync before rename: otherwise a crash can leave the renamed file empty on some filesystems.
  bool ok = writeAll(fd, bytes.data(), bytes.size()) && ::fsync(fd) == 0;
  int err = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && std::rename(tmpPath.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmpPath.c_str());
    throwWriteError(path, err);
  }
}

std::string readFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorKind::Io, fileErrorMessage("read", path, errno));
  struct stat st {};
  int statError = 0;
  if (::fstat(fd, &st) != 0)
    statError = errno;
  else if (!S_ISREG(st.st_mode))
    statError = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
  if (statError != 0) {
    ::close(fd);
    throw Error(ErrorKind::Io, fileErrorMessage("read", path, statError));
  }
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw Error(ErrorKind::Io, fileErrorMessage("read", path, err));
    }
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return bytes;
}

}  // namespace attnscope
