// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace attnscope::hub {

/// One model's folder in the Hugging Face hub cache, laid out as huggingface_hub lays it out, so
/// that either program finds what the other downloaded:
///
///   <cache>/models--ORG--NAME/blobs/<etag>                  each file's bytes, once
///   <cache>/models--ORG--NAME/blobs/<etag>.incomplete       a download in progress (resumable)
///   <cache>/models--ORG--NAME/snapshots/<commit>/<file>     ../../blobs/<etag> (relative link)
///   <cache>/models--ORG--NAME/refs/<revision>               the commit, no newline
///   <cache>/.locks/models--ORG--NAME/<etag>.lock            held while <etag> is written
///
/// The ETag is the sha256 of an LFS file and the git blob sha1 of any other. Names must have
/// passed hub_names.h's checks.
class HubCache final {
 public:
  HubCache(std::filesystem::path cacheDir, const std::string& repoId);

  /// "models--" + the repo id with '/' as "--": models--openai-community--gpt2.
  static std::string repoFolderName(const std::string& repoId);

  const std::filesystem::path& cacheDir() const { return m_cacheDir; }
  const std::filesystem::path& repoDir() const { return m_repoDir; }
  std::filesystem::path blobPath(const std::string& etag) const;
  std::filesystem::path incompletePath(const std::string& etag) const;
  std::filesystem::path lockPath(const std::string& etag) const;
  std::filesystem::path snapshotDir(const std::string& commit) const;
  std::filesystem::path pointerPath(const std::string& commit, const std::string& file) const;

  /// The commit refs/<revision> names; the revision itself when it is a commit hash.
  std::optional<std::string> resolveRevision(const std::string& revision) const;
  /// Writes refs/<revision> atomically (a temporary file renamed over it), unless it already
  /// names `commit` or `revision` is that commit.
  void writeRef(const std::string& revision, const std::string& commit) const;
  /// A complete blob is there.
  bool hasBlob(const std::string& etag) const;
  /// Makes snapshots/<commit>/<file> a relative link to blobs/<etag>, replacing whatever is
  /// there. The link is made only for a complete blob, so a snapshot never holds a broken or
  /// partial file.
  void link(const std::string& commit, const std::string& file, const std::string& etag) const;
  /// Creates the blob, snapshot and lock folders and the cache's CACHEDIR.TAG (backup tools skip
  /// a tagged folder). Throws Error (Io) when the cache cannot be written.
  void prepare() const;

 private:
  std::filesystem::path m_cacheDir;
  std::filesystem::path m_repoDir;
  std::string m_folderName;
};

}  // namespace attnscope::hub
