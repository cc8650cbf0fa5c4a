// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

#include <atomic>
#include <memory>

namespace attnscope::gui {

/// Lives on the download dialog's thread and runs one Hub download at a time there
/// (hub::HubDownloader blocks on its own event loop), so the window keeps drawing. Progress and
/// the outcome come back as queued signals; the dialog's cancel flag stops it within 50 ms.
class DownloadWorker final : public QObject {
  Q_OBJECT
 public:
  explicit DownloadWorker(std::shared_ptr<std::atomic<bool>> cancel, QObject* parent = nullptr);

 public Q_SLOTS:
  /// `includes`: extra globs (a GGUF repository: the file wanted).
  void download(const QString& repoId, const QString& revision, const QStringList& includes);

 Q_SIGNALS:
  /// `text`: "12.3 MB of 523 MB, 4.5 MB/s, 1 min 52 s left"; `permille` of the bytes, -1 while
  /// the total is unknown; `file`: "[2/5] model.safetensors" or a note.
  void progress(int permille, const QString& text, const QString& file);
  /// `source`: what ModelSpec::source takes to open the model (the repo id, or the GGUF
  /// file's path); `message`: the error when !ok ("" when it was cancelled).
  void finished(bool ok, const QString& source, const QString& message);

 private:
  std::shared_ptr<std::atomic<bool>> m_cancel;
};

}  // namespace attnscope::gui
