// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QRectF>

#include <vector>

#include "attention_view.h"
#include "head_matrix.h"

class QBoxLayout;
class QComboBox;
class QPushButton;
class QScrollBar;
class QSpinBox;
class QToolButton;

namespace attnscope::render {

struct RenderStyle;

/// Two heads side by side, A (layer, head, item) and B (vsLayer, vsHead, vsItem), their
/// difference A − B on a diverging palette centred at 0, and the Jensen–Shannon distance between
/// them (base 2, averaged over real queries). Items of different lengths are compared over their
/// common prefix, and the view says so. Hovering a cell marks the same cell in all three panels.
/// On screen a bar above the panels chooses A's and B's layer, head and sentence (and "same
/// head, other sentence"); each choice is sent back as viewStateEdited. The panels sit side by
/// side or, when that makes the cells larger, A and B above A − B, or all three in a column. On
/// screen a panel never shrinks below kMinPanelHeight: the view scrolls instead.
class CompareView final : public AttentionView {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);

  /// The least height of a panel on screen: below it a matrix is no longer readable.
  static constexpr double kMinPanelHeight = 150;

  ViewKind kind() const override { return ViewKind::Compare; }

  /// Head B from another model's run of the same text (a quantized file against its F16
  /// original): B's panel, the difference and the distance then compare the two models, and a
  /// table under the panels gives every head's distance between them. nullptr: B from result().
  void setOtherResult(ResultPtr other);
  const ResultPtr& otherResult() const { return m_other; }
  /// What the bar's "B from" button says: the other model's name, or empty for this model.
  void setOtherModelName(const QString& name);
  /// With another model: its mean JS distance to result() per head [layers*heads] (NaN for a
  /// layer not kept); empty otherwise or when the two cannot be compared (other tokens, shapes).
  const std::vector<double>& headDistances() const { return m_headDistances; }
  /// Why A and B cannot be compared (another model with other tokens); empty when they can.
  const QString& problem() const { return m_problem; }
  /// Mean JS distance between A and B over the common prefix; 0 without a valid selection.
  double distance() const { return m_distance; }
  /// The sentence under the panels ("Jensen–Shannon distance 0.231 …").
  QString summary() const;
  /// The hover text of cell (query, key): each panel's value with its own token labels.
  QString cellText(int query, int key) const;
  /// Where the panels are in the last on-screen layout (A, B, A − B), for tests.
  QRectF panelRect(int panel) const;
  /// Where each panel's title is in the last on-screen layout, for tests.
  QRectF titleRect(int panel) const;

 Q_SIGNALS:
  /// "B from" chose another model: a file (GGUF, safetensors) or, with `folder`, a folder.
  void otherModelRequested(bool folder);
  /// "B from" chose this model again.
  void otherModelCleared();

 protected:
  void rebuild(Change change) override;
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;

 private:
  enum class Arrangement { Across, Stacked, Column };
  struct Layout {
    QRectF cells[3];   // A, B, A − B
    QRectF titles[3];  // above each panel, never overlapping the next one
    double cell = 0;
    bool fitsWidth = true;
    QRectF weightBar, differenceBar;
    QRectF summary;
    QRectF table;   // with another model: the per-head distances, [layers] × [heads] cells
    QRectF extent;  // everything drawn: panels with their labels, bars and summary
    void shift(const QPointF& by);
  };
  Layout layoutFor(const QRect& area, const RenderStyle& style, bool onScreen) const;
  Layout layoutIn(const QRect& area, const RenderStyle& style, Arrangement arrangement,
                  double minPanel) const;
  /// The on-screen layout: the canvas less the scroll bar, shifted by the scroll position.
  Layout screenLayout() const;
  /// Shows the scroll bar, with its range, when the panels need more height than the canvas.
  void updateScrollBar();
  /// A, B and A − B and their distance, for the current result and state.
  void compare();
  void updateSelectors();
  void emitSelection();
  void sameHeadOtherSentence();
  /// The per-head distance table of another model under the panels.
  void drawHeadDistances(QPainter& painter, const QRectF& cells, const RenderStyle& style) const;

  QWidget* m_bar;
  QBoxLayout* m_barLayout = nullptr;
  QSpinBox* m_layerA;
  QSpinBox* m_headA;
  QComboBox* m_itemA;
  QSpinBox* m_layerB;
  QSpinBox* m_headB;
  QComboBox* m_itemB;
  QPushButton* m_otherSentence;
  QToolButton* m_modelB;
  QScrollBar* m_scroll;

  HeadMatrix m_a, m_b, m_diff;
  ResultPtr m_other;
  // What m_headDistances (and m_distanceProblem) were computed for. Owning: a freed result's
  // address could come back as the next one's.
  struct DistanceKey {
    ResultPtr a, b;
    std::string group;
    int item = -1;
    bool operator==(const DistanceKey& o) const {
      return a == o.a && b == o.b && group == o.group && item == o.item;
    }
  };
  DistanceKey m_distanceKey;
  std::vector<double> m_headDistances;
  QString m_distanceProblem;
  QString m_problem;
  QString m_otherName;  // B's model as the bar names it; empty: this model  // why A and B cannot
                        // be compared (shown instead of the panels)
  double m_distance = 0;
  bool m_valid = false;
  int m_hoverQuery = -1, m_hoverKey = -1;
};

}  // namespace attnscope::render
