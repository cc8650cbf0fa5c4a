// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QRectF>

#include "attention_view.h"
#include "generation_frame.h"

namespace attnscope::render {

struct RenderStyle;

/// One generation step: for every layer (rows) and head (columns), the attention of the query
/// that wrote the new token over every earlier token, as a strip of bars (one bar per key, its
/// height the weight), and in a last column the mean over the layer's heads. Prompt keys and
/// generated keys have different colours; hovering a bar names its key and weight; clicking a
/// strip selects its head. The step comes from setFrame (the document's selected step).
class StepView final : public AttentionView {
  Q_OBJECT
 public:
  explicit StepView(QWidget* parent = nullptr);

  ViewKind kind() const override { return ViewKind::Step; }

  void setFrame(const GenerationFrame& frame);
  const GenerationFrame& frame() const { return m_frame; }
  /// The weight drawn for (layer, head, key); head == heads() is the mean over the layer's heads.
  /// 0 outside the step's shape.
  double weight(int layer, int head, int key) const;
  int layers() const;
  int heads() const;
  int keys() const;
  /// The sentence drawn instead of the strips; empty when they are drawn.
  QString message() const;
  /// The strip of (layer, head) in the last drawing, in its painter's coordinates.
  QRectF stripRect(int layer, int head) const;
  /// A probability for the caption: three decimals, or two significant digits below 0.0005
  /// (0.00018 rather than "0.000": a sampled token can be that unlikely).
  static QString probabilityText(double p);

 protected:
  void rebuild(Change change) override;
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;

 private:
  /// The strip and key under `pos` (the widget's coordinates), false if none.
  bool hit(const QPointF& pos, int* layer, int* head, int* key) const;
  QString caption() const;

  GenerationFrame m_frame;
  std::vector<float> m_mean;          // [L, T]: the mean over heads
  QRectF m_lastCells, m_screenCells;  // the strips: [layers] rows × [heads + 1] columns
  double m_gap = 0;                   // between the heads' strips and the mean column
};

}  // namespace attnscope::render
