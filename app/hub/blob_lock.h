// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>

namespace attnscope::hub {

/// An exclusive flock(2) on a blob's lock file, held while the blob is written, so that two
/// processes (attnscope or huggingface_hub, which locks the same file) never write one
/// .incomplete file at once. The kernel drops the lock when its holder dies, even by kill -9, so
/// a crashed download never blocks the next one. The lock file itself stays, as huggingface_hub
/// leaves it: deleting a lock file another process has open would let a third lock a new one.
class BlobLock final {
 public:
  /// Takes the lock, waiting while another process holds it: `waiting` is called once when it
  /// must wait. Throws Error (Cancelled) when `cancel` becomes true meanwhile, Error (Io) when the
  /// lock file cannot be opened.
  BlobLock(const std::filesystem::path& path, const std::atomic<bool>* cancel,
           const std::function<void()>& waiting);
  ~BlobLock();
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;

 private:
  int m_fd = -1;
};

}  // namespace attnscope::hub
