// SPDX-License-Identifier: GPL-3.0-or-later
#include "download_worker.h"

#include "attnscope/error.h"
#include "hub_downloader.h"
#include "transfer_rate.h"

namespace attnscope::gui {

DownloadWorker::DownloadWorker(std::shared_ptr<std::atomic<bool>> cancel, QObject* parent)
    : QObject(parent), m_cancel(std::move(cancel)) {}

void DownloadWorker::download(const QString& repoId, const QString& revision,
                              const QStringList& includes) {
  hub::DownloadRequest request;
  request.repoId = repoId.trimmed().toStdString();
  request.revision = revision.trimmed().isEmpty() ? "main" : revision.trimmed().toStdString();
  for (const QString& glob : includes) {
    if (!glob.trimmed().isEmpty()) request.includes.push_back(glob.trimmed().toStdString());
  }
  const auto onProgress = [this](const hub::DownloadProgress& p) {
    const int permille =
        p.total > 0 ? static_cast<int>(std::min<std::uint64_t>(1000, p.done * 1000 / p.total)) : -1;
    const QString file = !p.note.empty() ? QString::fromStdString(p.note)
                                         : QStringLiteral("[%1/%2] %3")
                                               .arg(p.fileIndex)
                                               .arg(p.fileCount)
                                               .arg(QString::fromStdString(p.file));
    const QString text = p.total > 0 ? QString::fromStdString(hub::TransferRate::describe(
                                           p.done, p.total, p.bytesPerSecond, p.secondsLeft))
                                     : QString();
    Q_EMIT progress(permille, text, file);
  };
  try {
    const hub::DownloadResult result =
        hub::HubDownloader().download(request, onProgress, m_cancel.get());
    Q_EMIT finished(true, QString::fromStdString(result.modelSource), {});
  } catch (const Error& e) {
    Q_EMIT finished(false, {},
                    e.kind() == ErrorKind::Cancelled ? QString() : QString::fromUtf8(e.what()));
  } catch (const std::exception& e) {
    Q_EMIT finished(false, {}, tr("Internal error: %1").arg(QString::fromUtf8(e.what())));
  }
}

}  // namespace attnscope::gui
