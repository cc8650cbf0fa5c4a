// SPDX-License-Identifier: GPL-3.0-or-later
#include "blob_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "attnscope/error.h"

namespace attnscope::hub {

BlobLock::BlobLock(const std::filesystem::path& path, const std::atomic<bool>* cancel,
                   const std::function<void()>& waiting) {
  m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (m_fd < 0)
    throw Error(ErrorKind::Io,
                "cannot open the lock file " + path.string() + ": " + std::strerror(errno));
  bool told = false;
  // Polled rather than blocking, so that a cancel reaches a process waiting for another's download.
  while (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const int e = errno;
      ::close(m_fd);
      throw Error(ErrorKind::Io, "cannot lock " + path.string() + ": " + std::strerror(e));
    }
    if (cancel && cancel->load()) {
      ::close(m_fd);
      throw Error(ErrorKind::Cancelled, "download cancelled");
    }
    if (!told && waiting) waiting();
    told = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

BlobLock::~BlobLock() {
  if (m_fd >= 0) {
    ::flock(m_fd, LOCK_UN);
    ::close(m_fd);
  }
}

}  // namespace attnscope::hub
