// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QDialog>
#include <QThread>

#include <atomic>
#include <memory>

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;

namespace attnscope::gui {

class DownloadWorker;

/// File › Download Model…: a Hugging Face repo id (the families attnscope opens named beside
/// it), an optional file pattern for GGUF repositories, a progress bar with bytes, speed and time
/// left, and Cancel. The download runs on the dialog's own thread (DownloadWorker), so the window
/// keeps working; once it is in the cache, modelDownloaded() hands the model to the selector.
class DownloadDialog final : public QDialog {
  Q_OBJECT
 public:
  explicit DownloadDialog(QWidget* parent = nullptr);
  /// Cancels a download still running and waits for its thread (within about 50 ms).
  ~DownloadDialog() override;

  /// What the Download button does: starts fetching the repo id in the box.
  void startDownload();
  bool isDownloading() const { return m_running; }

 Q_SIGNALS:
  /// The model is in the cache; `source` opens it (ModelSpec::source): the repo id, or a GGUF
  /// file's path.
  void modelDownloaded(const QString& source);
  /// To the worker's thread (queued).
  void downloadRequested(const QString& repoId, const QString& revision,
                         const QStringList& includes);

 protected:
  /// Esc, the close button and Cancel: a running download is cancelled first.
  void reject() override;

 private:
  void onProgress(int permille, const QString& text, const QString& file);
  void onFinished(bool ok, const QString& source, const QString& message);
  void setRunning(bool running);

  QLineEdit* m_repo;
  QLineEdit* m_include;
  QProgressBar* m_bar;
  QLabel* m_file;
  QLabel* m_status;
  QPushButton* m_download;
  QPushButton* m_cancel;
  std::shared_ptr<std::atomic<bool>> m_cancelFlag;
  QThread m_thread;
  DownloadWorker* m_worker;
  bool m_running = false;
};

}  // namespace attnscope::gui
