// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QRectF>
#include <QString>

#include "attention_view.h"

namespace attnscope::render {

struct RenderStyle;

/// The logit lens of one batch item (AttentionResult::logitLensIds, logitLensProbs): a layers ×
/// positions grid, the last layer on top, each cell the token that layer's residual stream
/// predicts at that position (the model's final norm and head applied to it), coloured by its
/// probability on the palette's fixed [0, 1] scale. A frame marks cells whose top token is the
/// token that actually follows. The input tokens run along the bottom, the layer numbers along the
/// side; hovering a cell lists the top tokens kept (kTopTokens in the window) with their
/// probabilities and the right answer's. The last row is the model's own next-token prediction.
/// The window asks for the lens only while this view is open (Document::recompute).
class LogitLensView final : public AttentionView {
  Q_OBJECT
 public:
  /// Tokens kept per layer and position by the window's and the CLI export's runs.
  static constexpr int kTopTokens = 10;

  explicit LogitLensView(QWidget* parent = nullptr);

  ViewKind kind() const override { return ViewKind::LogitLens; }

  int layers() const;
  /// The real positions of the selected batch item.
  int positions() const;
  /// The i-th most probable token id at (layer, position) and its probability; -1 and 0 outside.
  int64_t topId(int layer, int position, int i = 0) const;
  double topProbability(int layer, int position, int i = 0) const;
  /// What cell (layer, position) says: its top token's readable label.
  QString cellText(int layer, int position) const;
  /// The hover text of a cell: the kept top tokens and the right answer's probability.
  QString cellTip(int layer, int position) const;
  /// The sentence drawn instead of the grid; empty when the grid is drawn.
  QString message() const;
  /// The cell of (layer, position) in the last drawing, in its painter's coordinates.
  QRectF cellRect(int layer, int position) const;

 protected:
  void rebuild(Change change) override;
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  bool hit(const QPointF& pos, int* layer, int* position) const;
  QString tokenLabel(int64_t id) const;
  std::size_t cellIndex(int layer, int position) const;

  QRectF m_lastCells, m_screenCells;  // the grid: [layers] rows × [positions] columns
  int m_hoverLayer = -1, m_hoverPosition = -1;
};

}  // namespace attnscope::render
