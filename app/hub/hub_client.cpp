// SPDX-License-Identifier: GPL-3.0-or-later
#include "hub_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QEventLoop>
#include <QNetworkAccessManager>
#include <QNetworkProxyFactory>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QSslSocket>
#include <QTimer>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "attnscope/error.h"

namespace attnscope::hub {

namespace {

constexpr int kMaxRedirects = 10;
// The file list of a repository with thousands of files is a few MB; a hostile server must
// not fill memory.
constexpr qsizetype kMaxApiBody = 64 * 1024 * 1024;

QByteArray userAgent() {
  return QByteArray("attnscope/") + ATTNSCOPE_VERSION + "; qt/" + qVersion();
}

bool sameOrigin(const QUrl& a, const QUrl& b) {
  return a.scheme() == b.scheme() && a.host().compare(b.host(), Qt::CaseInsensitive) == 0 &&
         a.port(a.scheme() == "https" ? 443 : 80) == b.port(b.scheme() == "https" ? 443 : 80);
}

// "W/\"abc\"" and "\"abc\"" -> "abc" (huggingface_hub's _normalize_etag).
std::string normalizedEtag(QByteArray etag) {
  etag = etag.trimmed();
  if (etag.startsWith("W/")) etag = etag.mid(2);
  if (etag.size() >= 2 && etag.startsWith('"') && etag.endsWith('"'))
    etag = etag.mid(1, etag.size() - 2);
  return etag.toStdString();
}

QByteArray percentEncodedPath(const std::string& path) {
  QByteArray out;
  for (const QByteArray& part : QByteArray::fromStdString(path).split('/')) {
    if (!out.isEmpty()) out += '/';
    out += QUrl::toPercentEncoding(QString::fromUtf8(part));
  }
  return out;
}

bool isRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

}  // namespace

struct HubClient::Exchange {
  int status = 0;  // 0: no HTTP answer
  QList<QPair<QByteArray, QByteArray>> headers;
  QByteArray body;  // API answers and error answers; a download's bytes go to its file
  QUrl url;         // the last URL asked
  QNetworkReply::NetworkError error = QNetworkReply::NoError;
  QString errorString;
  bool cancelled = false;
  bool timedOut = false;
  std::string stopped;  // why onData stopped the transfer

  QByteArray header(const char* name) const {
    for (const auto& h : headers) {
      if (h.first.compare(name, Qt::CaseInsensitive) == 0) return h.second;
    }
    return {};
  }
  bool hasHeader(const char* name) const {
    for (const auto& h : headers) {
      if (h.first.compare(name, Qt::CaseInsensitive) == 0) return true;
    }
    return false;
  }
};

HubClient::HubClient(const HubSettings& settings, std::string repoId,
                     const std::atomic<bool>* cancel)
    : m_settings(settings),
      m_repoId(std::move(repoId)),
      m_endpoint(QUrl(QString::fromStdString(settings.endpoint))),
      m_cancel(cancel),
      m_manager(std::make_unique<QNetworkAccessManager>()) {
  // Proxies as the system sets them (on Linux: http_proxy, https_proxy, no_proxy).
  QNetworkProxyFactory::setUseSystemConfiguration(true);
  if (m_endpoint.scheme() == "https" && !QSslSocket::supportsSsl())
    throw Error(ErrorKind::Unavailable,
                "Qt Network has no TLS backend here, so " + settings.endpoint +
                    " cannot be reached (install Qt's OpenSSL plugin: qt6-base's tls plugins)");
}

HubClient::~HubClient() = default;

QUrl HubClient::endpointUrl(const QString& path) const {
  return QUrl::fromEncoded(QByteArray::fromStdString(m_settings.endpoint) + path.toUtf8());
}

HubClient::Exchange HubClient::wait(QNetworkReply* reply, int timeoutMs,
                                    const std::function<std::string(QNetworkReply*)>& onData) {
  Exchange e;
  using Clock = std::chrono::steady_clock;
  auto last = Clock::now();
  QEventLoop loop;
  QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
  QObject::connect(reply, &QNetworkReply::metaDataChanged, &loop, [&] { last = Clock::now(); });
  if (!onData) {
    QObject::connect(reply, &QNetworkReply::downloadProgress, &loop, [&](qint64 received, qint64) {
      if (received > kMaxApiBody && e.stopped.empty()) {
        e.stopped = "the Hub's answer is larger than " + std::to_string(kMaxApiBody >> 20) + " MB";
        reply->abort();
      }
    });
  }
  QObject::connect(reply, &QNetworkReply::readyRead, &loop, [&] {
    last = Clock::now();
    if (!onData || !e.stopped.empty()) return;
    e.stopped = onData(reply);
    if (!e.stopped.empty()) reply->abort();
  });
  // Cancels and stalls are noticed between network events, within 50 ms.
  QTimer tick;
  tick.setInterval(50);
  QObject::connect(&tick, &QTimer::timeout, &loop, [&] {
    if (m_cancel && m_cancel->load()) {
      e.cancelled = true;
      reply->abort();
    } else if (Clock::now() - last > std::chrono::milliseconds(timeoutMs)) {
      e.timedOut = true;
      reply->abort();
    }
  });
  tick.start();
  if (!reply->isFinished()) loop.exec();
  tick.stop();
  if (onData && e.stopped.empty() && !e.cancelled && reply->isOpen() && reply->bytesAvailable() > 0)
    e.stopped = onData(reply);
  const QVariant status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute);
  e.status = status.isValid() ? status.toInt() : 0;
  e.headers = reply->rawHeaderPairs();
  e.error = reply->error();
  e.errorString = reply->errorString();
  e.url = reply->url();
  if (!onData && reply->isOpen()) e.body = reply->read(kMaxApiBody);
  return e;
}

HubClient::Exchange HubClient::send(const QByteArray& verb, QUrl url,
                                    const QList<QPair<QByteArray, QByteArray>>& headers,
                                    bool followAbsolute, int timeoutMs,
                                    const std::function<std::string(QNetworkReply*)>& onData) {
  for (int hop = 0; hop <= kMaxRedirects; ++hop) {
    if (m_cancel && m_cancel->load()) throw Error(ErrorKind::Cancelled, "download cancelled");
    QNetworkRequest request(url);
    request.setAttribute(QNetworkRequest::RedirectPolicyAttribute,
                         QNetworkRequest::ManualRedirectPolicy);
    request.setRawHeader("User-Agent", userAgent());
    // No compression: sizes, ranges and hashes are of the file's own bytes.
    request.setRawHeader("Accept-Encoding", "identity");
    for (const auto& h : headers) request.setRawHeader(h.first, h.second);
    // The token goes to the Hub only: a redirect to storage elsewhere (a CDN with a signed URL)
    // must not carry it, as huggingface_hub drops it for another host.
    if (!m_settings.token.empty() && sameOrigin(url, m_endpoint))
      request.setRawHeader("Authorization",
                           "Bearer " + QByteArray::fromStdString(m_settings.token));
    // head() and get() rather than a custom verb: Qt then knows a HEAD answer has no body.
    QNetworkReply* reply = verb == "HEAD"  ? m_manager->head(request)
                           : verb == "GET" ? m_manager->get(request)
                                           : m_manager->sendCustomRequest(request, verb);
    const std::unique_ptr<QNetworkReply, void (*)(QNetworkReply*)> owner(
        reply, [](QNetworkReply* r) { r->deleteLater(); });
    Exchange e = wait(reply, timeoutMs, onData);
    if (e.cancelled) throw Error(ErrorKind::Cancelled, "download cancelled");
    if (!isRedirect(e.status) || !e.hasHeader("Location")) return e;
    const QUrl target = QUrl::fromEncoded(e.header("Location"));
    // huggingface_hub follows relative redirects only when it asks for metadata: an absolute
    // one leads to the storage, and its headers are the Hub's answer.
    if (!followAbsolute && !target.isRelative()) return e;
    url = url.resolved(target);
    if (url.scheme() != "https" && url.scheme() != "http")
      throw Error(ErrorKind::Unavailable, "the Hub redirected " + m_repoId +
                                              " to a URL that is "
                                              "not http(s)");
  }
  throw Error(ErrorKind::Unavailable, "the Hub redirected a request for " + m_repoId +
                                          " more than " + std::to_string(kMaxRedirects) + " times");
}

void HubClient::throwNetwork(const Exchange& e) const {
  const std::string host = e.url.host().toStdString();
  if (e.timedOut)
    throw Error(ErrorKind::Unavailable,
                "no answer from " + host + " within " +
                    std::to_string(m_settings.transferTimeoutMs / 1000) +
                    " s; check the network connection (HF_HUB_DOWNLOAD_TIMEOUT sets the wait)");
  throw Error(ErrorKind::Unavailable,
              "cannot reach " + host + ": " + e.errorString.toStdString() +
                  "; check the network connection and any proxy settings (https_proxy, no_proxy)");
}

void HubClient::throwHttp(const Exchange& e, const std::string& notFound) const {
  const std::string code = e.header("X-Error-Code").toStdString();
  const std::string message = e.header("X-Error-Message").toStdString();
  const std::string page = m_settings.endpoint + "/" + m_repoId;
  const std::string gated =
      m_repoId + ": this model is gated: accept its licence on the Hub and set HF_TOKEN (" + page +
      (m_settings.token.empty() ? ")" : "; the token given has no access to it yet)");
  if (e.status == 401 && message == "Invalid credentials in Authorization header")
    throw Error(ErrorKind::InvalidArgument,
                "the Hub refused the token (invalid credentials): check HF_TOKEN or make a new "
                "token at " +
                    m_settings.endpoint + "/settings/tokens");
  if (code == "GatedRepo") throw Error(ErrorKind::InvalidArgument, gated);
  if (code == "RevisionNotFound") throw Error(ErrorKind::InvalidArgument, notFound);
  if (code == "EntryNotFound" || code == "RepoNotFound" || e.status == 404)
    throw Error(ErrorKind::InvalidArgument,
                notFound + (code == "RepoNotFound" && m_settings.token.empty()
                                ? " (a private model also needs HF_TOKEN)"
                                : ""));
  if (e.status == 401 || e.status == 403) throw Error(ErrorKind::InvalidArgument, gated);
  if (e.status == 429)
    throw Error(ErrorKind::Unavailable,
                "the Hub is limiting requests (HTTP 429); wait a minute and try again");
  const std::string reason =
      e.hasHeader("X-Error-Message") ? message : std::string("HTTP ") + std::to_string(e.status);
  if (e.status >= 500)
    throw Error(ErrorKind::Unavailable, "the Hub answered HTTP " + std::to_string(e.status) +
                                            " for " + m_repoId + "; try again later");
  throw Error(ErrorKind::Unavailable,
              "the Hub refused the request for " + m_repoId + ": " + reason);
}

QByteArray HubClient::revisionInfo(const std::string& revision) {
  const QUrl url =
      endpointUrl(QStringLiteral("/api/models/") + QString::fromStdString(m_repoId) + "/revision/" +
                  QUrl::toPercentEncoding(QString::fromStdString(revision)));
  // Every redirect is followed here (a renamed repository's may be absolute); the token still
  // goes to the endpoint's origin only.
  const Exchange e = send("GET", url, {{"Accept", "application/json"}}, /*followAbsolute=*/true,
                          m_settings.metadataTimeoutMs, nullptr);
  if (e.status == 0) throwNetwork(e);
  if (e.status != 200)
    throwHttp(e, "no such model or revision: " + m_repoId +
                     (revision == "main" ? std::string() : " at revision '" + revision + "'"));
  return e.body;
}

HubClient::FileMetadata HubClient::fileMetadata(const std::string& commit,
                                                const std::string& file) {
  const QUrl url = endpointUrl(QStringLiteral("/") + QString::fromStdString(m_repoId) +
                               "/resolve/" + QString::fromStdString(commit) + "/" +
                               QString::fromUtf8(percentEncodedPath(file)));
  const Exchange e =
      send("HEAD", url, {}, /*followAbsolute=*/false, m_settings.metadataTimeoutMs, nullptr);
  if (e.status == 0) throwNetwork(e);
  if (e.status >= 400) throwHttp(e, m_repoId + " has no file " + file + " at commit " + commit);
  FileMetadata m;
  m.commit = e.header("X-Repo-Commit").toStdString();
  m.etag =
      normalizedEtag(e.hasHeader("X-Linked-Etag") ? e.header("X-Linked-Etag") : e.header("ETag"));
  const QByteArray size = e.hasHeader("X-Linked-Size")
                              ? e.header("X-Linked-Size")
                              : (isRedirect(e.status) ? QByteArray() : e.header("Content-Length"));
  bool ok = false;
  m.size = size.trimmed().toULongLong(&ok);
  if (m.commit.empty())
    throw Error(ErrorKind::Unavailable, "the answer for " + file +
                                            " did not come from the Hub (no X-Repo-Commit header): "
                                            "check HF_ENDPOINT, the proxy and the firewall");
  if (m.etag.empty())
    throw Error(ErrorKind::Unavailable,
                "the Hub sent no ETag for " + file + ", so it cannot be cached reliably");
  if (!ok) throw Error(ErrorKind::Unavailable, "the Hub sent no size for " + file);
  m.location = isRedirect(e.status) && e.hasHeader("Location")
                   ? e.url.resolved(QUrl::fromEncoded(e.header("Location")))
                   : e.url;
  return m;
}

HubClient::FetchOutcome HubClient::fetch(const QUrl& location,
                                         const std::filesystem::path& incomplete,
                                         std::uint64_t expectedSize,
                                         const std::function<void(std::uint64_t)>& onSize) {
  const int fd = ::open(incomplete.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(ErrorKind::Io, "cannot write " + incomplete.string() + ": " + std::strerror(errno));
  const std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  struct stat st {};
  ::fstat(fd, &st);
  std::uint64_t offset = static_cast<std::uint64_t>(st.st_size);
  if (offset > expectedSize) {  // not this file's start: begin again
    if (::ftruncate(fd, 0) != 0)
      throw Error(ErrorKind::Io, "cannot truncate " + incomplete.string());
    offset = 0;
  }
  if (offset == expectedSize) return {true, {}};
  QList<QPair<QByteArray, QByteArray>> headers;
  if (offset > 0)
    headers.append({"Range", "bytes=" + QByteArray::number(qulonglong(offset)) + "-"});

  bool started = false;
  std::uint64_t written = offset;
  const auto onData = [&](QNetworkReply* reply) -> std::string {
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status != 200 && status != 206) {
      reply->readAll();  // a redirect's or an error's page: only its status and headers count
      return {};
    }
    if (!started) {
      started = true;
      if (status == 200) {
        // The server sent the whole file (it ignored the range, or none was asked for).
        written = 0;
      } else {
        // "bytes 100-199/200": the part must continue the file where it ends.
        const QByteArray range = reply->rawHeader("Content-Range");
        const QByteArray from = range.mid(range.indexOf(' ') + 1).split('-').value(0);
        if (from.toULongLong() != offset)
          return "the server resumed at the wrong place (" + range.toStdString() + ")";
      }
      if (::ftruncate(fd, static_cast<off_t>(written)) != 0 ||
          ::lseek(fd, static_cast<off_t>(written), SEEK_SET) < 0)
        return std::string("cannot write ") + incomplete.string() + ": " + std::strerror(errno);
    }
    const QByteArray chunk = reply->readAll();
    if (written + std::uint64_t(chunk.size()) > expectedSize)
      return "the server sent more than the " + std::to_string(expectedSize) + " bytes announced";
    for (qsizetype at = 0; at < chunk.size();) {
      const ssize_t n = ::write(fd, chunk.constData() + at, static_cast<size_t>(chunk.size() - at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        return std::string("cannot write ") + incomplete.string() + ": " +
               (errno == ENOSPC ? "the disk is full" : std::strerror(errno));
      at += n;
    }
    written += std::uint64_t(chunk.size());
    if (onSize) onSize(written);
    return {};
  };
  const Exchange e =
      send("GET", location, headers, /*followAbsolute=*/true, m_settings.transferTimeoutMs, onData);
  if (!e.stopped.empty()) {
    // A bad range: start the file over on the next attempt.
    if (e.stopped.rfind("the server", 0) == 0) {
      if (::ftruncate(fd, 0) != 0)
        throw Error(ErrorKind::Io, "cannot truncate " + incomplete.string());
      return {false, e.stopped};
    }
    throw Error(ErrorKind::Io, e.stopped);
  }
  if (e.status == 416) {  // the range starts at or past the end: start over
    if (::ftruncate(fd, 0) != 0)
      throw Error(ErrorKind::Io, "cannot truncate " + incomplete.string());
    return {false, "the server refused to resume (HTTP 416)"};
  }
  if (e.status != 0 && e.status != 200 && e.status != 206) {
    throwHttp(e, m_repoId + ": a file is missing from the Hub's storage (HTTP " +
                     std::to_string(e.status) + ")");
  }
  if (e.status == 0 && !started) {
    if (e.timedOut) return {false, "no answer within the timeout"};
    return {false, e.errorString.toStdString()};
  }
  if (e.error != QNetworkReply::NoError || e.timedOut)
    return {false, e.timedOut ? std::string("the transfer stalled") : e.errorString.toStdString()};
  if (written != expectedSize)
    return {false, "the connection closed after " + std::to_string(written) + " of " +
                       std::to_string(expectedSize) + " bytes"};
  if (::fsync(fd) != 0)
    throw Error(ErrorKind::Io, "cannot write " + incomplete.string() + ": " + std::strerror(errno));
  return {true, {}};
}

}  // namespace attnscope::hub
