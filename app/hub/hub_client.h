// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QByteArray>
#include <QList>
#include <QPair>
#include <QString>
#include <QUrl>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "hub_settings.h"

class QNetworkAccessManager;
class QNetworkReply;

namespace attnscope::hub {

/// The Hub's HTTP protocol over Qt Network: the revision's file list, a file's metadata and a
/// file's bytes, each a blocking call that runs a local event loop, so the same code serves the
/// CLI's main thread and the window's download thread (create and use it on one thread, with a
/// QCoreApplication alive). Redirects are followed by hand: the Hub's own answer carries the
/// headers that matter (X-Repo-Commit, X-Linked-Etag, X-Linked-Size), and the token goes to
/// the endpoint's origin only, never to the storage a download is redirected to. HTTP errors
/// become Error with a message a person can act on; the token never appears in one.
class HubClient final {
 public:
  /// A file's identity at a commit, from the Hub's answer to HEAD .../resolve/<commit>/<file>.
  struct FileMetadata {
    std::string commit;      // X-Repo-Commit
    std::string etag;        // X-Linked-Etag, else ETag, unquoted: sha256 (LFS) or git sha1
    std::uint64_t size = 0;  // X-Linked-Size, else Content-Length
    QUrl location;           // where the bytes are: the redirect's target, else the resolve URL
  };
  /// How a transfer ended when it did not fail outright: complete, or broken off after some
  /// bytes (connection dropped, timed out) and worth resuming.
  struct FetchOutcome {
    bool complete = false;
    std::string problem;  // why it broke off
  };

  HubClient(const HubSettings& settings, std::string repoId, const std::atomic<bool>* cancel);
  ~HubClient();
  HubClient(const HubClient&) = delete;
  HubClient& operator=(const HubClient&) = delete;

  /// GET {endpoint}/api/models/{repo}/revision/{revision}: the JSON body.
  QByteArray revisionInfo(const std::string& revision);
  /// HEAD {endpoint}/{repo}/resolve/{commit}/{file}, following only relative redirects (a
  /// renamed repository), as huggingface_hub does.
  FileMetadata fileMetadata(const std::string& commit, const std::string& file);
  /// Appends the bytes of `location` to `incomplete` from its current size on (an HTTP Range
  /// request when it is not empty), following every redirect; `onSize` gets the file's size as
  /// it grows. Throws Error for HTTP errors, a cancel, or a write that fails.
  FetchOutcome fetch(const QUrl& location, const std::filesystem::path& incomplete,
                     std::uint64_t expectedSize, const std::function<void(std::uint64_t)>& onSize);

 private:
  struct Exchange;
  /// Sends one request and follows its redirects (all of them, or only relative ones); `onData`
  /// sees each piece of the body as it arrives and returns an error text to stop.
  Exchange send(const QByteArray& verb, QUrl url,
                const QList<QPair<QByteArray, QByteArray>>& headers, bool followAbsolute,
                int timeoutMs, const std::function<std::string(QNetworkReply*)>& onData);
  Exchange wait(QNetworkReply* reply, int timeoutMs,
                const std::function<std::string(QNetworkReply*)>& onData);
  /// A Hub error answer as an Error: gated, missing, refused token, rate limit, server trouble.
  [[noreturn]] void throwHttp(const Exchange& e, const std::string& subject) const;
  /// A failure before any HTTP answer (DNS, refused connection, TLS, proxy, timeout).
  [[noreturn]] void throwNetwork(const Exchange& e) const;
  QUrl endpointUrl(const QString& path) const;

  HubSettings m_settings;
  std::string m_repoId;
  QUrl m_endpoint;
  const std::atomic<bool>* m_cancel;
  std::unique_ptr<QNetworkAccessManager> m_manager;
};

}  // namespace attnscope::hub
