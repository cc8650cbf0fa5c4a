// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "training_job.h"

class QAction;
class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSlider;
class QSpinBox;
class QThread;

namespace attnscope::gui {

class Document;
class ErrorBanner;
class LossPlot;
class TrainingWorker;

/// The Train tab: trains the chapter's character GPT on a text file on a thread of its own, draws
/// the loss curves, and makes the document show the latest weights while it runs. Snapshots kept
/// in memory sit on a step slider, so moving it shows how each head's pattern formed; any of them
/// can be saved as a checkpoint that "Open checkpoint file…" reopens.
class TrainingPanel final : public QWidget {
  Q_OBJECT
 public:
  /// Beyond this many snapshots every second one is dropped, so a long run stays small in memory.
  static constexpr int kMaxSnapshots = 100;

  explicit TrainingPanel(Document* document, QWidget* parent = nullptr);
  ~TrainingPanel() override;

  /// Loads a UTF-8 corpus; false (and the reason in the panel) when it is refused.
  bool setCorpusPath(const QString& path);
  void setOptions(const TrainOptions& options, int threads);
  TrainOptions options() const;

  /// Starts a run; false (and the reason in the panel) when the settings are refused.
  bool start();
  /// Asks the running trainer to stop after its current step; the window does not wait.
  void stop();
  bool isRunning() const { return m_running; }

  int snapshotCount() const { return int(m_snapshots.size()); }
  int selectedSnapshot() const;
  /// Shows snapshot `index` (oldest first) in the document and stops following the training.
  void selectSnapshot(int index);
  /// Writes the selected snapshot atomically; returns the error, empty on success.
  QString saveModel(const QString& path) const;

  QString errorMessage() const;
  const LossPlot* lossPlot() const { return m_plot; }

 Q_SIGNALS:
  void runFinished(bool cancelled);
  /// Internal: queued to the training thread.
  void trainRequested(const attnscope::gui::TrainingJob& job);

 private:
  void chooseCorpus();
  void saveDialog();
  void onProgress(quint64 run, const TrainProgress& progress);
  void onEvaluated(const TrainingSnapshot& snapshot);
  void onSnapshot(const TrainingSnapshot& snapshot);
  void onFinished(const TrainingOutcome& outcome);
  /// Inserts by step (replacing one at the same step) and thins to kMaxSnapshots.
  void keepSnapshot(const TrainingSnapshot& snapshot);
  void updateSlider();
  void showInDocument(const TrainingSnapshot& snapshot);
  void setRunning(bool running);
  void showError(const QString& message);

  Document* m_document;
  std::shared_ptr<const std::string> m_corpus;
  std::vector<TrainingSnapshot> m_snapshots;  // oldest first
  bool m_follow = true;  // the document shows each new evaluation until the slider is moved back
  bool m_running = false;
  quint64 m_run = 0;
  std::shared_ptr<std::atomic<bool>> m_cancel;
  int m_steps = 0;

  ErrorBanner* m_banner;
  QLineEdit* m_corpusPath;
  QAction* m_corpusWarning;  // the field's warning icon: the typed path cannot be used
  QString m_corpusFile;      // the corpus in use
  QLabel* m_corpusInfo;
  QSpinBox* m_layers;
  QSpinBox* m_heads;
  QSpinBox* m_embd;
  QSpinBox* m_block;
  QSpinBox* m_stepsBox;
  QSpinBox* m_batch;
  QDoubleSpinBox* m_lr;
  QSpinBox* m_seed;
  QSpinBox* m_evalEvery;
  QSpinBox* m_snapshotEvery;
  QSpinBox* m_threads;
  QPushButton* m_start;
  QPushButton* m_stop;
  QPushButton* m_save;
  QProgressBar* m_progress;
  QLabel* m_status;
  LossPlot* m_plot;
  QCheckBox* m_baseline;
  QSlider* m_slider;
  QLabel* m_sliderLabel;

  QThread* m_thread;
  TrainingWorker* m_worker;  // lives on m_thread, deleted when it finishes
};

}  // namespace attnscope::gui
