// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QRectF>
#include <QString>

#include "layer_position_view.h"

class QFrame;
class QLabel;
class QTableWidget;

namespace attnscope::render {

class Palette;
struct RenderStyle;

/// The logit lens of one batch item (AttentionResult::logitLensIds, logitLensProbs): a layers ×
/// positions grid, the last layer on top, each cell the token that layer's residual stream
/// predicts at that position (the model's final norm and head applied to it), coloured by its
/// probability on the palette's fixed [0, 1] scale. A frame marks cells whose top token is the
/// token that actually follows. The input tokens run along the bottom, the layer numbers along the
/// side; hovering a cell lists its five most probable tokens and the right answer's; clicking it
/// opens that layer's distribution at that position: every kept token (kTopTokens in the window)
/// with its probability in a scrollable list, the mass of the rest and the entropy of the whole
/// distribution. The last row is the model's own next-token prediction.
/// The window asks for the lens only while this view is open (Document::recompute).
class LogitLensView final : public LayerPositionView {
  Q_OBJECT
 public:
  /// Tokens kept per layer and position by the window's and the CLI export's runs.
  static constexpr int kTopTokens = 50;
  /// The tokens the hover text lists.
  static constexpr int kTipTokens = 5;

  explicit LogitLensView(QWidget* parent = nullptr);

  ViewKind kind() const override { return ViewKind::LogitLens; }

  int layers() const override;
  int positions() const override;
  /// The i-th most probable token id at (layer, position) and its probability; -1 and 0 outside.
  int64_t topId(int layer, int position, int i = 0) const;
  double topProbability(int layer, int position, int i = 0) const;
  /// What cell (layer, position) says: its top token's readable label.
  QString cellText(int layer, int position) const;
  /// The hover text of a cell: the kept top tokens and the right answer's probability.
  QString cellTip(int layer, int position) const override;
  /// The entropy (nats) of the whole distribution at (layer, position); -1 when not known.
  double entropy(int layer, int position) const;
  /// Opens (or refills) the distribution of cell (layer, position): a popup by the cell, a
  /// heading with the entropy and a list of the kept tokens, the most probable first.
  void showDistribution(int layer, int position);
  /// The popup (null before the first click), its heading and its list.
  QFrame* distributionPanel() const { return m_panel; }
  QString distributionHeading() const;
  QTableWidget* distributionTable() const { return m_table; }

 protected:
  QString missing() const override;
  void cellClicked(int layer, int position) override { showDistribution(layer, position); }
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;

 private:
  QString tokenLabel(int64_t id) const;
  std::size_t cellIndex(int layer, int position) const;
  void drawLegend(QPainter& painter, const RenderStyle& style, const Palette& palette) const;

  QFrame* m_panel = nullptr;
  QLabel* m_heading = nullptr;
  QTableWidget* m_table = nullptr;
};

}  // namespace attnscope::render
