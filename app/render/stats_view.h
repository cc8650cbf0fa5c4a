// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QStringList>

#include <string>
#include <vector>

#include "attention_view.h"
#include "attnscope/head_statistics.h"

class QComboBox;
class QCustomPlot;
class QSplitter;
class QTableWidget;

namespace attnscope::render {

struct RenderStyle;

/// Numbers that say what each head does (attnscope::headStatistics for the selected batch item):
/// a sortable table of every head, a bar chart of one chosen statistic across heads, and the
/// head-similarity matrix (1 − mean Jensen–Shannon distance) that shows redundant heads.
/// Clicking a table row selects that head (viewStateEdited); double-clicking opens it
/// (headActivated).
class StatsView final : public AttentionView {
  Q_OBJECT
 public:
  explicit StatsView(QWidget* parent = nullptr);
  ~StatsView() override;

  ViewKind kind() const override { return ViewKind::Stats; }

  /// "entropy (nats)", "mean distance (tokens)", …, in the order of setStatistic's index.
  static QStringList statisticNames();
  static double statisticOf(const HeadStatistics& s, int index);
  /// Which statistic the bar chart shows.
  void setStatistic(int index);
  int statistic() const { return m_statistic; }
  /// One entry per head, layer-major ([layer * heads + head]).
  const std::vector<HeadStatistics>& statistics() const { return m_stats; }
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
  void drawSimilarity(QPainter& painter, const QRectF& rect, const RenderStyle& style) const;
  void drawTable(QPainter& painter, const QRectF& rect, const RenderStyle& style) const;
  QString headName(int index) const;

  int m_statistic = 0;
  int m_computedItem = -1;
  std::string m_computedGroup;  // the group m_stats were computed from
  std::vector<HeadStatistics> m_stats;
  std::vector<double> m_similarity;
  QComboBox* m_statBox = nullptr;
  QSplitter* m_split = nullptr;
  bool m_userSized = false;  // the user dragged the divider: keep their split
  QTableWidget* m_table = nullptr;
  Charts* m_charts = nullptr;
};

}  // namespace attnscope::render
