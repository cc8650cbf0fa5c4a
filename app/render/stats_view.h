// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QStringList>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "attention_view.h"
#include "attnscope/head_statistics.h"
#include "attnscope/long_range.h"

class QComboBox;
class QCustomPlot;
class QLabel;
class QProgressBar;
class QSplitter;
class QTableWidget;
class QTimer;

namespace attnscope::render {

struct RenderStyle;

/// Numbers that say what each head does (attnscope::longRangeProfile for the selected batch item:
/// headStatistics' numbers, the attention-sink share and the weight by distance): a sortable
/// table of every head, a bar chart of one chosen statistic across heads (or the selected layer's
/// heads' weight by log-distance, one line each), and the head-similarity matrix (1 − mean
/// Jensen–Shannon distance) that shows redundant heads.
/// Clicking a table row selects that head (viewStateEdited); double-clicking opens it
/// (headActivated).
class StatsView final : public AttentionView {
  Q_OBJECT
 public:
  explicit StatsView(QWidget* parent = nullptr);
  ~StatsView() override;

  ViewKind kind() const override { return ViewKind::Stats; }

  /// "entropy (nats)", "mean distance (tokens)", …, "sink share (first 4 tokens)", then the
  /// distance profile, in the order of setStatistic's index.
  static QStringList statisticNames();
  /// The statistic of that index for the head statistics' six (NaN for the sink share and the
  /// distance profile, which are not in HeadStatistics).
  static double statisticOf(const HeadStatistics& s, int index);
  /// The keys a head's attention sink is counted over: the first four, as StreamingLLM keeps.
  static constexpr int kSinkTokens = 4;
  static constexpr int kSinkStatistic = 6;      // index of "sink share" in statisticNames
  static constexpr int kDistanceStatistic = 7;  // the distance profile instead of bars
  /// Head `index`'s (layer · heads + head) value of a statistic, the sink share included.
  double valueOf(int index, int statistic) const;
  /// One entry per head, layer-major: the sink share and the weight by distance bucket.
  const std::vector<LongRangeProfile>& profiles() const { return m_profiles; }
  /// Which statistic the bar chart shows.
  void setStatistic(int index);
  int statistic() const { return m_statistic; }
  /// One entry per head, layer-major ([layer * heads + head]): the profiles' statistics.
  std::vector<HeadStatistics> statistics() const;
  /// In a shown window, the profiles of a group recomputed on demand are computed on a pool
  /// thread (a progress bar says how far; no numbers are shown meanwhile): true while that runs.
  bool computing() const { return m_job != nullptr; }
  /// "Computing statistics… 37 / 512 heads" while computing(), else empty.
  QString progressText() const;
  /// Every head's profile of one batch item, layer-major, as the view shows them. Stops early
  /// (fewer entries) once *cancel is set, checked between heads; *done counts the heads finished.
  static std::vector<LongRangeProfile> computeProfiles(const AttentionGroup& group, int item,
                                                       const std::atomic<bool>* cancel = nullptr,
                                                       std::atomic<int>* done = nullptr);
  /// [heads × heads] row-major, heads numbered layer * heads + head.
  const std::vector<double>& similarity() const { return m_similarity; }

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void paintEvent(QPaintEvent*) override {}  // the table and the charts, children, are the screen
  void rebuild(Change change) override;
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;

 private:
  /// Gives the table the width of its columns, up to 55% of the view.
  void fitTable();
  class Charts;
  void fillTable();
  /// Selects the table row of the selected head (no signal).
  void selectCurrentRow();
  /// The bar chart and the similarity matrix, side by side or stacked to fit rect.
  void drawCharts(QPainter& painter, const QRectF& rect, const RenderStyle& style) const;
  void drawBarChart(QPainter& painter, const QRectF& rect, const RenderStyle& style) const;
  /// The selected layer's heads' mean weight by log-distance bucket, a line each, the selected
  /// head's in the accent colour: local heads fall, long-range ones stay up.
  void drawDistanceProfile(QPainter& painter, const QRectF& rect, const RenderStyle& style) const;
  void drawSimilarity(QPainter& painter, const QRectF& rect, const RenderStyle& style) const;
  void drawTable(QPainter& painter, const QRectF& rect, const RenderStyle& style) const;
  QString headName(int index) const;

  /// Whether the profiles of this group are computed on a pool thread (on demand, in a shown
  /// window, more than a few heads' worth of cells).
  bool computeInBackground(const AttentionGroup& group) const;
  /// Starts computeProfiles on a pool thread for the current result, group and item.
  void startInBackground(const AttentionGroup& group, int item);
  /// Stops the running job (checked between heads); its result is never installed.
  void cancelJob();
  /// The job's numbers, back on the UI thread.
  void install(std::vector<LongRangeProfile> profiles);
  void updateProgress();

  int m_statistic = 0;
  int m_computedItem = -1;
  std::string m_computedGroup;  // the group m_profiles were (or are being) computed from
  std::vector<LongRangeProfile> m_profiles;  // [layers · heads]
  std::vector<double> m_similarity;
  struct Job;
  std::shared_ptr<Job> m_job;  // the pool thread's, while it runs
  quint64 m_generation = 0;    // bumped for every new set of numbers
  QLabel* m_progress = nullptr;
  QProgressBar* m_progressBar = nullptr;
  QTimer* m_progressTimer = nullptr;
  QComboBox* m_statBox = nullptr;
  QSplitter* m_split = nullptr;
  bool m_userSized = false;  // the user dragged the divider: keep their split
  QTableWidget* m_table = nullptr;
  Charts* m_charts = nullptr;
};

}  // namespace attnscope::render
