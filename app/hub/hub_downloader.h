// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <functional>

#include "download_request.h"
#include "hub_settings.h"

namespace attnscope::hub {

/// Downloads a model from the Hugging Face Hub into the shared hub cache (HubCache's layout):
/// the revision's file list from the Hub API, the files attnscope needs (FileSelection), each
/// file's identity from the Hub, its bytes resumed from a partial blob after a dropped
/// connection or a killed process, checked against its sha256 (git sha1 for small files) before
/// it becomes a blob, every blob under a lock, and the snapshot's links made only once every
/// file is complete. What the Python tools cached is reused, not fetched again.
///
/// Qt Network carries the transfers (HubClient): a QCoreApplication must exist, and download()
/// runs a local event loop on the calling thread, so a window calls it from a worker thread.
class HubDownloader final {
 public:
  using ProgressFn = std::function<void(const DownloadProgress&)>;

  explicit HubDownloader(HubSettings settings = HubSettings::fromEnvironment());

  /// Blocks until the model is in the cache. `progress` is called on this thread, a few times a
  /// second while bytes arrive. Throws Error: InvalidArgument (a bad id, a gated or missing
  /// model), Unavailable (network, offline mode), ResourceLimit (disk space), Io, Format (a
  /// corrupt transfer), Cancelled (when `cancel` became true; what is complete stays cached and a
  /// partial file stays resumable, but nothing is linked into the snapshot).
  DownloadResult download(const DownloadRequest& request, const ProgressFn& progress = {},
                          const std::atomic<bool>* cancel = nullptr) const;

 private:
  HubSettings m_settings;
};

}  // namespace attnscope::hub
