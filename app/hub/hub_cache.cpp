// SPDX-License-Identifier: GPL-3.0-or-later
#include "hub_cache.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "attnscope/error.h"
#include "hub_names.h"

namespace attnscope::hub {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void failCache(const std::string& what, const fs::path& path, const std::string& why) {
  throw Error(ErrorKind::Io, "cannot " + what + " " + path.string() + ": " + why +
                                 " (set HF_HUB_CACHE to a folder you can write)");
}

void makeDirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) failCache("create", dir, ec.message());
}

}  // namespace

HubCache::HubCache(fs::path cacheDir, const std::string& repoId)
    : m_cacheDir(std::move(cacheDir)),
      m_repoDir(m_cacheDir / repoFolderName(repoId)),
      m_folderName(repoFolderName(repoId)) {}

std::string HubCache::repoFolderName(const std::string& repoId) {
  std::string name = "models";
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = repoId.find('/', start);
    name += "--" + repoId.substr(start, slash - start);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return name;
}

fs::path HubCache::blobPath(const std::string& etag) const { return m_repoDir / "blobs" / etag; }

fs::path HubCache::incompletePath(const std::string& etag) const {
  return m_repoDir / "blobs" / (etag + ".incomplete");
}

fs::path HubCache::lockPath(const std::string& etag) const {
  return m_cacheDir / ".locks" / m_folderName / (etag + ".lock");
}

fs::path HubCache::snapshotDir(const std::string& commit) const {
  return m_repoDir / "snapshots" / commit;
}

fs::path HubCache::pointerPath(const std::string& commit, const std::string& file) const {
  return snapshotDir(commit) / fs::path(file);
}

std::optional<std::string> HubCache::resolveRevision(const std::string& revision) const {
  if (isCommitHash(revision)) return revision;
  std::error_code ec;
  const fs::path ref = m_repoDir / "refs" / fs::path(revision);
  if (!fs::is_regular_file(ref, ec) || fs::file_size(ref, ec) > 256) return std::nullopt;
  std::ifstream in(ref, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string commit = text.str();
  // huggingface_hub writes no newline; a hand-edited ref may have one.
  while (!commit.empty() && (commit.back() == '\n' || commit.back() == '\r')) commit.pop_back();
  if (!isCommitHash(commit)) return std::nullopt;
  return commit;
}

void HubCache::writeRef(const std::string& revision, const std::string& commit) const {
  if (revision == commit || resolveRevision(revision) == commit) return;
  const fs::path ref = m_repoDir / "refs" / fs::path(revision);
  makeDirs(ref.parent_path());
  // A reader (the catalogue, Python) sees the old commit or the new one, never half of it.
  const fs::path tmp =
      ref.parent_path() / (ref.filename().string() + "." + std::to_string(::getpid()) + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << commit;
    out.close();
    if (!out) failCache("write", tmp, std::strerror(errno));
  }
  std::error_code ec;
  fs::rename(tmp, ref, ec);
  if (ec) {
    fs::remove(tmp, ec);
    failCache("write", ref, ec.message());
  }
}

bool HubCache::hasBlob(const std::string& etag) const {
  std::error_code ec;
  return fs::is_regular_file(blobPath(etag), ec);
}

void HubCache::link(const std::string& commit, const std::string& file,
                    const std::string& etag) const {
  const fs::path pointer = pointerPath(commit, file);
  makeDirs(pointer.parent_path());
  // Relative, as huggingface_hub makes them, so that a moved or copied cache still works:
  // "../../blobs/<etag>" for a file at the top of the snapshot.
  const fs::path target = blobPath(etag).lexically_relative(pointer.parent_path());
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(pointer, ec)) && fs::read_symlink(pointer, ec) == target)
    return;
  fs::remove(pointer, ec);
  // symlink() is atomic: the link exists whole or not at all, and only for a complete blob.
  fs::create_symlink(target, pointer, ec);
  if (ec) failCache("link", pointer, ec.message());
}

void HubCache::prepare() const {
  makeDirs(m_repoDir / "blobs");
  makeDirs(m_cacheDir / ".locks" / m_folderName);
  const fs::path tag = m_cacheDir / "CACHEDIR.TAG";
  std::error_code ec;
  if (!fs::exists(tag, ec)) {
    // The Cache Directory Tagging Specification's signature, then a comment.
    std::ofstream out(tag, std::ios::binary);
    out << "Signature: 8a477f597d28d172789f06886806bc55\n"
           "# This folder is the Hugging Face hub cache; attnscope and huggingface_hub share it.\n"
           "# About cache directory tags: https://bford.info/cachedir/\n";
  }
}

}  // namespace attnscope::hub
