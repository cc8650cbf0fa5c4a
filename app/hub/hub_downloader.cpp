// SPDX-License-Identifier: GPL-3.0-or-later
#include "hub_downloader.h"

#include <QCryptographicHash>
#include <QFile>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "attnscope/error.h"
#include "attnscope/model_catalog.h"
#include "blob_lock.h"
#include "file_selection.h"
#include "hub_cache.h"
#include "hub_client.h"
#include "hub_names.h"
#include "transfer_rate.h"

namespace attnscope::hub {

namespace fs = std::filesystem;

namespace {

// Attempts in a row that bring no new byte before a transfer is given up (huggingface_hub: 5).
constexpr int kTries = 5;
constexpr auto kRetryPause = std::chrono::milliseconds(300);
constexpr auto kReportEvery = std::chrono::milliseconds(100);

std::uint64_t sizeOf(const fs::path& p) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  return ec ? 0 : static_cast<std::uint64_t>(size);
}

bool isHex(const std::string& s, std::size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

void throwIfCancelled(const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) throw Error(ErrorKind::Cancelled, "download cancelled");
}

/// The digest the ETag promises: sha256 of the bytes for an LFS file (64 hex digits), git's blob
/// sha1 ("blob <size>\0" + bytes) for a file kept in git (40); empty for another ETag form.
std::string digestFor(const fs::path& file, const std::string& etag,
                      const std::atomic<bool>* cancel) {
  QCryptographicHash::Algorithm algorithm;
  if (isHex(etag, 64))
    algorithm = QCryptographicHash::Sha256;
  else if (isHex(etag, 40))
    algorithm = QCryptographicHash::Sha1;
  else
    return {};
  QCryptographicHash hash(algorithm);
  if (algorithm == QCryptographicHash::Sha1) {
    const QByteArray header = "blob " + QByteArray::number(qulonglong(sizeOf(file)));
    hash.addData(header);
    hash.addData(QByteArray(1, '\0'));
  }
  QFile in(QString::fromStdString(file.string()));
  if (!in.open(QIODevice::ReadOnly))
    throw Error(ErrorKind::Io, "cannot read " + file.string() + " to check it");
  QByteArray buffer(1 << 20, Qt::Uninitialized);
  while (true) {
    throwIfCancelled(cancel);
    const qint64 n = in.read(buffer.data(), buffer.size());
    if (n < 0) throw Error(ErrorKind::Io, "cannot read " + file.string() + " to check it");
    if (n == 0) break;
    hash.addData(QByteArrayView(buffer.constData(), n));
  }
  return hash.result().toHex().toStdString();
}

/// One download: the client, the cache and the progress shared by its steps.
class DownloadRun {
 public:
  DownloadRun(const HubSettings& settings, const DownloadRequest& request,
              const HubDownloader::ProgressFn& progress, const std::atomic<bool>* cancel)
      : m_request(request),
        m_progress(progress),
        m_cancel(cancel),
        m_cache(fs::absolute(settings.cacheDir), request.repoId),
        m_client(settings, request.repoId, cancel) {}

  DownloadResult run();

 private:
  struct Item {
    std::string file;
    HubClient::FileMetadata meta;
  };

  Item describe(const std::string& file);
  /// Makes blobs/<etag> exist, complete and checked.
  void ensureBlob(const Item& item, int index, int count);
  void checkDiskSpace(const std::vector<Item>& items) const;
  void report(const std::string& file, int index, int count, const std::string& note = {},
              bool force = false);

  const DownloadRequest& m_request;
  const HubDownloader::ProgressFn& m_progress;
  const std::atomic<bool>* m_cancel;
  HubCache m_cache;
  HubClient m_client;
  std::string m_commit;
  std::uint64_t m_total = 0;
  std::uint64_t m_done = 0;     // bytes of finished files, cached ones included
  std::uint64_t m_current = 0;  // bytes of the file in progress
  std::uint64_t m_fetched = 0;  // bytes received from the network
  TransferRate m_rate;
  TransferRate::Clock::time_point m_lastReport{};
};

DownloadRun::Item DownloadRun::describe(const std::string& file) {
  Item item{file, m_client.fileMetadata(m_commit, file)};
  if (item.meta.commit != m_commit)
    throw Error(ErrorKind::Unavailable, "the Hub answered for commit " + item.meta.commit +
                                            " while " + m_request.repoId + " is at " + m_commit +
                                            "; try again");
  if (!isSafeEtag(item.meta.etag))
    throw Error(ErrorKind::Format, "the Hub's ETag for " + file + " is not a file name");
  return item;
}

void DownloadRun::report(const std::string& file, int index, int count, const std::string& note,
                         bool force) {
  if (!m_progress) return;
  const auto now = TransferRate::Clock::now();
  const std::uint64_t done = m_done + m_current;
  m_rate.add(done, now);
  if (!force && note.empty() && now - m_lastReport < kReportEvery) return;
  m_lastReport = now;
  DownloadProgress p;
  p.file = file;
  p.fileIndex = index;
  p.fileCount = count;
  p.done = done;
  p.total = m_total;
  p.bytesPerSecond = m_rate.bytesPerSecond();
  p.secondsLeft = m_rate.secondsLeft(m_total > done ? m_total - done : 0);
  p.note = note;
  m_progress(p);
}

void DownloadRun::checkDiskSpace(const std::vector<Item>& items) const {
  std::uint64_t needed = 0;
  for (const Item& item : items) {
    if (m_cache.hasBlob(item.meta.etag)) continue;
    const std::uint64_t partial =
        std::min(item.meta.size, sizeOf(m_cache.incompletePath(item.meta.etag)));
    needed += item.meta.size - partial;
  }
  std::error_code ec;
  const fs::space_info space = fs::space(m_cache.repoDir() / "blobs", ec);
  if (ec || needed <= space.available) return;
  throw Error(ErrorKind::ResourceLimit, "not enough disk space for " + m_request.repoId +
                                            ": it needs " + TransferRate::formatBytes(needed) +
                                            " more and " + m_cache.cacheDir().string() + " has " +
                                            TransferRate::formatBytes(space.available) +
                                            " free (HF_HUB_CACHE moves the cache)");
}

void DownloadRun::ensureBlob(const Item& item, int index, int count) {
  const std::string& etag = item.meta.etag;
  if (m_cache.hasBlob(etag)) return;
  const BlobLock lock(m_cache.lockPath(etag), m_cancel, [&] {
    report(item.file, index, count, "waiting for another download of " + item.file, true);
  });
  // Another process may have finished it while this one waited.
  if (m_cache.hasBlob(etag)) return;
  checkDiskSpace({item});
  const fs::path incomplete = m_cache.incompletePath(etag);
  std::uint64_t before = std::min(sizeOf(incomplete), item.meta.size);
  m_current = before;
  report(item.file, index, count,
         before > 0 ? "resuming " + item.file + " from " + TransferRate::formatBytes(before)
                    : std::string(),
         true);
  for (int triesLeft = kTries;;) {
    const auto outcome =
        m_client.fetch(item.meta.location, incomplete, item.meta.size, [&](std::uint64_t size) {
          if (size > m_current) m_fetched += size - m_current;
          m_current = size;
          report(item.file, index, count);
        });
    if (outcome.complete) break;
    const std::uint64_t now = sizeOf(incomplete);
    m_current = now;
    triesLeft = now > before ? kTries : triesLeft - 1;
    before = now;
    if (triesLeft == 0)
      throw Error(ErrorKind::Unavailable, "downloading " + item.file + " of " + m_request.repoId +
                                              " failed (" + outcome.problem +
                                              "); run the download again to resume it");
    report(item.file, index, count,
           "connection lost (" + outcome.problem + "); resuming " + item.file + " from " +
               TransferRate::formatBytes(now),
           true);
    for (auto waited = std::chrono::milliseconds(0); waited < kRetryPause;
         waited += std::chrono::milliseconds(50)) {
      throwIfCancelled(m_cancel);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  const std::string digest = digestFor(incomplete, etag, m_cancel);
  if (!digest.empty() && digest != etag) {
    std::error_code ec;
    fs::remove(incomplete, ec);
    throw Error(ErrorKind::Format,
                item.file + " of " + m_request.repoId + " arrived corrupt (its " +
                    (etag.size() == 64 ? "sha256" : "git sha1") +
                    " differs from the Hub's); the partial file was removed: run the download "
                    "again");
  }
  std::error_code ec;
  fs::rename(incomplete, m_cache.blobPath(etag), ec);
  if (ec)
    throw Error(ErrorKind::Io,
                "cannot move " + incomplete.string() + " into place: " + ec.message());
}

DownloadResult DownloadRun::run() {
  report({}, 0, 0, "asking " + m_request.repoId + " for its files", true);
  const nlohmann::json info =
      nlohmann::json::parse(m_client.revisionInfo(m_request.revision).toStdString(), nullptr,
                            /*allow_exceptions=*/false);
  if (!info.is_object() || !info.contains("sha") || !info["sha"].is_string() ||
      !isCommitHash(info["sha"].get<std::string>()))
    throw Error(ErrorKind::Format,
                "the Hub's answer for " + m_request.repoId + " names no commit: check HF_ENDPOINT");
  m_commit = info["sha"].get<std::string>();
  std::vector<std::string> siblings;
  if (info.contains("siblings") && info["siblings"].is_array()) {
    for (const auto& s : info["siblings"]) {
      if (s.is_object() && s.contains("rfilename") && s["rfilename"].is_string())
        siblings.push_back(s["rfilename"].get<std::string>());
    }
  }
  FileSelection selection = FileSelection::choose(m_request.repoId, siblings, m_request.includes);
  m_cache.prepare();

  std::vector<Item> items;
  if (!selection.index.empty()) {
    // The index names the shards: it comes first, alone.
    const Item index = describe(selection.index);
    m_total = index.meta.size;
    ensureBlob(index, 1, 1);
    QFile in(QString::fromStdString(m_cache.blobPath(index.meta.etag).string()));
    if (!in.open(QIODevice::ReadOnly) || in.size() > (64 << 20))
      throw Error(ErrorKind::Format, "cannot read " + selection.index);
    selection.addShards(in.readAll().toStdString(), siblings);
  }
  report({}, 0, int(selection.files.size()),
         "checking " + std::to_string(selection.files.size()) + " files", true);
  for (const std::string& file : selection.files) items.push_back(describe(file));
  m_total = 0;
  m_done = 0;
  for (const Item& item : items) {
    m_total += item.meta.size;
    if (m_cache.hasBlob(item.meta.etag)) m_done += item.meta.size;
  }
  checkDiskSpace(items);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (m_cache.hasBlob(items[i].meta.etag)) continue;
    ensureBlob(items[i], int(i + 1), int(items.size()));
    m_done += items[i].meta.size;
    m_current = 0;
    report(items[i].file, int(i + 1), int(items.size()), {}, true);
  }

  // Every blob is complete: only now does the snapshot get its links, config.json last, so a
  // snapshot with a config.json (what the catalogue lists) has all its files.
  throwIfCancelled(m_cancel);
  std::stable_partition(items.begin(), items.end(),
                        [](const Item& item) { return item.file != "config.json"; });
  for (const Item& item : items) m_cache.link(m_commit, item.file, item.meta.etag);
  m_cache.writeRef(m_request.revision, m_commit);

  DownloadResult result;
  result.repoId = m_request.repoId;
  result.revision = m_request.revision;
  result.commit = m_commit;
  result.snapshotDir = m_cache.snapshotDir(m_commit).string();
  for (const Item& item : items) result.files.push_back(item.file);
  result.totalBytes = m_total;
  result.fetchedBytes = m_fetched;
  result.gguf = !selection.gguf.empty();
  result.modelSource = result.gguf ? m_cache.pointerPath(m_commit, selection.gguf).string() : "";
  return result;
}

/// HF_HUB_OFFLINE: what the cache already holds for the revision, without a request.
DownloadResult fromCache(const HubCache& cache, const DownloadRequest& request) {
  const auto commit = cache.resolveRevision(request.revision);
  std::error_code ec;
  DownloadResult result;
  result.repoId = request.repoId;
  result.revision = request.revision;
  result.offline = true;
  if (commit) {
    const fs::path snapshot = cache.snapshotDir(*commit);
    result.commit = *commit;
    result.snapshotDir = snapshot.string();
    if (fs::is_regular_file(snapshot / "config.json", ec)) return result;
    std::vector<std::string> ggufs;
    for (fs::directory_iterator it(snapshot, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const bool wanted = request.includes.empty() ||
                          std::any_of(request.includes.begin(), request.includes.end(),
                                      [&](const std::string& g) { return matchesGlob(g, name); });
      if (it->path().extension() == ".gguf" && wanted && fs::is_regular_file(it->path(), ec))
        ggufs.push_back(it->path().string());
    }
    if (ggufs.size() == 1) {
      result.gguf = true;
      result.modelSource = ggufs.front();
      return result;
    }
  }
  throw Error(ErrorKind::Unavailable,
              "HF_HUB_OFFLINE is set, so attnscope does not reach the Hub, and " + request.repoId +
                  " (revision " + request.revision + ") is not in the cache " +
                  cache.cacheDir().string() + "; unset HF_HUB_OFFLINE to download it");
}

}  // namespace

HubDownloader::HubDownloader(HubSettings settings) : m_settings(std::move(settings)) {}

DownloadResult HubDownloader::download(const DownloadRequest& request, const ProgressFn& progress,
                                       const std::atomic<bool>* cancel) const {
  checkRepoId(request.repoId);
  checkRevision(request.revision);
  if (m_settings.cacheDir.empty())
    throw Error(ErrorKind::Unavailable,
                "no Hugging Face cache folder: set HF_HUB_CACHE (or HF_HOME, or HOME)");
  DownloadResult result;
  if (m_settings.offline) {
    result = fromCache(HubCache(fs::absolute(m_settings.cacheDir), request.repoId), request);
  } else {
    DownloadRun run(m_settings, request, progress, cancel);
    result = run.run();
  }
  if (result.gguf) return result;
  // The name --model takes: the repo id when the catalogue finds this very snapshot by it (the
  // cache searched first, refs/main), else the snapshot's folder.
  result.modelSource = result.snapshotDir;
  if (const auto found = resolveCachedModel(request.repoId)) {
    std::error_code ec;
    if (fs::equivalent(*found, result.snapshotDir, ec)) result.modelSource = request.repoId;
  }
  return result;
}

}  // namespace attnscope::hub
