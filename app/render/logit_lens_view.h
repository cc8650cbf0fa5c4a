// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QRectF>
#include <QString>

#include "layer_position_view.h"

namespace attnscope::render {

class Palette;
struct RenderStyle;

/// The logit lens of one batch item (AttentionResult::logitLensIds, logitLensProbs): a layers ×
/// positions grid, the last layer on top, each cell the token that layer's residual stream
/// predicts at that position (the model's final norm and head applied to it), coloured by its
/// probability on the palette's fixed [0, 1] scale. A frame marks cells whose top token is the
/// token that actually follows. The input tokens run along the bottom, the layer numbers along the
/// side; hovering a cell lists the top tokens kept (kTopTokens in the window) with their
/// probabilities and the right answer's. The last row is the model's own next-token prediction.
/// The window asks for the lens only while this view is open (Document::recompute).
class LogitLensView final : public LayerPositionView {
  Q_OBJECT
 public:
  /// Tokens kept per layer and position by the window's and the CLI export's runs.
  static constexpr int kTopTokens = 10;

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

 protected:
  QString missing() const override;
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;

 private:
  QString tokenLabel(int64_t id) const;
  std::size_t cellIndex(int layer, int position) const;
  void drawLegend(QPainter& painter, const RenderStyle& style, const Palette& palette) const;
};

}  // namespace attnscope::render
