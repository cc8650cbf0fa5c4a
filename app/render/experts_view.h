// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QColor>
#include <QFontMetricsF>
#include <QString>

#include "layer_position_view.h"

namespace attnscope::render {

struct RenderStyle;

/// Mixture-of-experts routing of one batch item (AttentionResult::routerExperts, routerWeights):
/// a layers × positions grid, the last layer on top like the logit lens, each cell split across
/// into the k experts the router chose for that token at that layer, each part as wide as its
/// share of the chosen weights and coloured by its expert (the number written on it where it
/// fits). Dense layers (Qwen3-MoE's mlp_only_layers) are left grey. The selected layer's row is
/// framed; hovering a cell lists the experts with their exact weights.
class ExpertsView final : public LayerPositionView {
  Q_OBJECT
 public:
  explicit ExpertsView(QWidget* parent = nullptr);

  ViewKind kind() const override { return ViewKind::Experts; }

  int layers() const override;
  int positions() const override;
  /// Experts chosen per token (the router's k).
  int chosen() const;
  /// How many experts the drawing tells apart: the largest id chosen, plus one.
  int experts() const;
  /// The i-th expert chosen at (layer, position) and its weight; -1 and 0 on dense layers and
  /// outside.
  int expert(int layer, int position, int i) const;
  double weight(int layer, int position, int i) const;
  /// The colour of an expert, the same in every cell and the legend.
  static QColor expertColour(int expert);
  QString cellTip(int layer, int position) const override;

 protected:
  QString missing() const override;
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;

 private:
  std::size_t cellIndex(int layer, int position) const;
  void drawCell(QPainter& painter, int layer, int position, const QFontMetricsF& font,
                const QColor& dense) const;
  void drawLegend(QPainter& painter, const RenderStyle& style) const;
};

}  // namespace attnscope::render
