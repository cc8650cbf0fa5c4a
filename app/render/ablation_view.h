// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QRectF>

#include "ablation_status.h"
#include "attention_view.h"

class QLabel;
class QProgressBar;
class QPushButton;

namespace attnscope::render {

struct RenderStyle;

/// Head ablation as an L×H map: each cell is Δ log p of the model's own top prediction (the next
/// token, or a mask's fill) when that head's output is zeroed, on a diverging palette centred at
/// 0 and symmetric about it, with the values printed where they fit and the strongest heads
/// listed below. The caption names the target token and its baseline probability, and says so
/// when the map is the one-pass estimate (attribution patching) rather than exact ablation.
/// Hovering a cell gives its numbers; clicking it selects the head (headActivated). The map is
/// computed by whoever owns the status (the document's worker, or the CLI); on screen a bar
/// above the drawing asks for it, shows the progress and cancels.
class AblationView final : public AttentionView {
  Q_OBJECT
 public:
  explicit AblationView(QWidget* parent = nullptr);

  ViewKind kind() const override { return ViewKind::Ablation; }

  void setAblation(const AblationStatus& status);
  const AblationStatus& ablation() const { return m_status; }
  /// The sentence drawn instead of the map (no ablation yet, running, failed, cancelled); empty
  /// when the map is drawn.
  QString message() const;
  /// The cell of (layer, head) in the last renderTo, in its painter's coordinates (the widget's
  /// own after a paint on screen); empty when no map was drawn.
  QRectF cellRect(int layer, int head) const;

 Q_SIGNALS:
  /// The user asked for the exact ablation of every head (estimate false) or the estimate.
  void ablationRequested(bool estimate);
  void ablationCancelRequested();

 protected:
  /// The map comes from setAblation; the result and the state change the buttons and colours.
  void rebuild(Change change) override;
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;

 private:
  bool hasMap() const;
  /// The heading, the baseline and the notices above the map; returns where they end.
  double drawCaption(QPainter& painter, const QRect& area, const RenderStyle& style) const;
  /// "strongest: L1 H2 −2.00 (p 0.054) · …", the heads of largest |Δ log p|.
  QString strongestHeads() const;
  /// The cells (colours symmetric in ±range), their values where they fit, the selected head.
  void drawMap(QPainter& painter, const QRectF& cells, double range,
               const RenderStyle& style) const;
  bool hit(const QPointF& pos, int* layer, int* head) const;
  void updateControls();

  QWidget* m_bar;
  QPushButton* m_exact;
  QPushButton* m_estimate;
  QProgressBar* m_progress;
  QPushButton* m_cancel;
  QLabel* m_state;

  AblationStatus m_status;
  QRectF m_lastCells, m_screenCells;  // the whole map: [layers] rows × [heads] columns
};

}  // namespace attnscope::render
