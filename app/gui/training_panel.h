// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "training_job.h"
#include "training_session.h"

class QAction;
class QCheckBox;
class QDoubleSpinBox;
class QFormLayout;
class QGridLayout;
class QGroupBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSlider;
class QSpinBox;

namespace attnscope::gui {

class Document;
class ErrorBanner;
class LossPlot;

/// The Train tab: trains the chapter's character GPT on a text file on a thread of its own, draws
/// the loss curves, and, when the user asks (the "Show in the views" box), makes the document show
/// the latest weights while it runs. Snapshots kept
/// in memory sit on a step slider, so moving it shows how each head's pattern formed; any of them
/// can be saved as a checkpoint that "Open checkpoint file…" reopens.
class TrainingPanel final : public QWidget {
  Q_OBJECT
 public:
  /// Beyond this many snapshots every second one is dropped, so a long run stays small in memory.
  static constexpr int kMaxSnapshots = TrainingSession::kMaxSnapshots;

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
  bool isRunning() const { return m_session->isRunning(); }
  const TrainingSession& session() const { return *m_session; }

  /// Whether the window's views show the snapshots (off at first: the window's model changes
  /// only when the user asks). Turning it on shows the snapshot on the slider at once.
  void setShowInViews(bool on);
  bool showsInViews() const;

  int snapshotCount() const { return int(m_session->snapshots().size()); }
  int selectedSnapshot() const;
  /// Shows snapshot `index` (oldest first) in the document and stops following the training.
  void selectSnapshot(int index);
  /// Writes the selected snapshot atomically; returns the error, empty on success.
  QString saveModel(const QString& path) const;

  QString errorMessage() const;
  const LossPlot* lossPlot() const { return m_plot; }

 Q_SIGNALS:
  void runFinished(bool cancelled);

 public:
  /// The width of the one-column layout: the panel reflows rather than demand two columns.
  QSize minimumSizeHint() const override;

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  /// The constructor's parts, top to bottom: the corpus field, the settings, the buttons and the
  /// snapshot slider.
  QFormLayout* corpusForm();
  QGroupBox* settingsBox();
  QGridLayout* buttonRow();
  /// Lays the settings and the buttons out in two columns or, when the panel is narrow, one,
  /// so that the panel never needs more width than its side of the window has.
  void reflow();
  /// The widths one column of settings needs, and two columns with the buttons on one row.
  int oneColumnWidth() const;
  int twoColumnWidth() const;
  QHBoxLayout* sliderRow();
  void chooseCorpus();
  void saveDialog();
  void onProgress(const TrainProgress& progress);
  void onSnapshotsChanged();
  void onFinished(const TrainingOutcome& outcome);
  void updateSlider();
  void showInDocument(const TrainingSnapshot& snapshot);
  void setRunning(bool running);
  void showError(const QString& message);

  Document* m_document;
  std::shared_ptr<const std::string> m_corpus;
  TrainingSession* m_session;  // the run and its snapshots
  bool m_follow = true;  // the document shows each new evaluation until the slider is moved back
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
  QCheckBox* m_showInViews;  // opt-in: the snapshots replace the window's model
  QSlider* m_slider;
  QLabel* m_sliderLabel;
  QGridLayout* m_settingsGrid = nullptr;
  QList<QPair<QWidget*, QWidget*>> m_settingsFields;  // (label, field), in reading order
  QGridLayout* m_buttons = nullptr;
  int m_columns = 0;  // of the current reflow
};

}  // namespace attnscope::gui
