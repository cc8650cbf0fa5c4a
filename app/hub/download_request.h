// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::hub {

/// What to download: a model repository of the Hub at a revision, and extra files.
struct DownloadRequest {
  std::string repoId;                 // "gpt2", "HuggingFaceTB/SmolLM2-135M"
  std::string revision = "main";      // a branch, tag or commit hash
  std::vector<std::string> includes;  // fnmatch globs adding files (a GGUF repo: the file wanted)
};

/// Where a download is, reported many times a second while bytes arrive.
struct DownloadProgress {
  std::string file;   // the file being fetched ("" while the file list is read)
  int fileIndex = 0;  // 1-based, among fileCount
  int fileCount = 0;
  std::uint64_t done = 0;     // bytes of all the files there so far (cached ones included)
  std::uint64_t total = 0;    // bytes of all the files; 0 until known
  double bytesPerSecond = 0;  // over the last seconds; 0 when unknown
  double secondsLeft = -1;    // at that speed; negative when unknown
  std::string note;           // a one-off message ("waiting for another download of ...")
};

/// What a finished download left in the cache.
struct DownloadResult {
  std::string repoId;
  std::string revision;
  std::string commit;       // the commit the revision named
  std::string snapshotDir;  // <cache>/models--ORG--NAME/snapshots/<commit>
  /// What --model takes to open it: the repo id for a model folder (the catalogue finds it),
  /// the .gguf file's path inside the snapshot for a GGUF repository.
  std::string modelSource;
  bool gguf = false;
  std::vector<std::string> files;  // the files linked into the snapshot
  std::uint64_t totalBytes = 0;    // their size
  std::uint64_t fetchedBytes = 0;  // received from the network by this download
  bool offline = false;            // HF_HUB_OFFLINE: found in the cache, nothing was fetched
};

}  // namespace attnscope::hub
