// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QRectF>

#include <vector>

#include "attention_view.h"

class QComboBox;

namespace attnscope::render {

struct RenderStyle;

/// What the Q/K view shows for one head, one query and one key.
struct QueryKeyProducts {
  int query = -1, key = -1;      // token positions
  std::vector<float> q, k;       // [head_dim] the head's query and key vectors
  std::vector<double> products;  // [head_dim] q_d·k_d, which sum to the unscaled score
  double sum = 0;                // Σ_d q_d·k_d
  double scale = 0;              // the layer's factor of q·kᵀ
  double softcap = 0;            // > 0: the scaled product is then capped (Gemma 2)
  double score = 0;              // the kept score (scaled, biased, masked): NaN when not kept
  double weight = 0;             // the attention weight after softmax
  bool masked = false;           // the key is masked for this query (score −∞)

  bool valid() const { return query >= 0 && key >= 0 && !q.empty(); }
};

/// BertViz's neuron view for one head: the query vector of a chosen query token, the key vector
/// of a chosen key token and their per-dimension products q_d·k_d as three aligned colour strips
/// on a diverging palette centred at 0 (q and k share a scale; the products have their own), the
/// products again as bars, and the sum: Σ_d q_d·k_d, times the layer's scale, is the score before
/// softmax (a position bias, where the family adds one, is the difference the view prints). The
/// query is the pinned one or the last token; the key the pinned key or the query's strongest.
/// Needs the queries and keys a run keeps with RunRequest::keepQueryKey. On screen, a bar above
/// the drawing chooses both tokens.
class QueryKeyView final : public AttentionView {
  Q_OBJECT
 public:
  explicit QueryKeyView(QWidget* parent = nullptr);

  ViewKind kind() const override { return ViewKind::QueryKey; }

  /// The vectors and numbers shown (invalid when there is nothing to show).
  const QueryKeyProducts& products() const { return m_products; }
  /// The strip of row 0 (q), 1 (k) or 2 (q_d·k_d) in the last renderTo.
  QRectF stripRect(int row) const;
  /// Why nothing is drawn, or empty.
  QString problem() const { return m_problem; }

 protected:
  void rebuild(Change change) override;
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  struct Layout {
    QRectF strips[3];
    QRectF bars;  // the products as bars, zero in the middle
    QRectF vectorScale, productScale;
    double labelRight = 0;
  };
  Layout layoutFor(const QRectF& area, const RenderStyle& style) const;
  /// The products as bars around a zero line, with the dimensions numbered below.
  void drawBars(QPainter& painter, const QRect& area, const Layout& lay, const RenderStyle& style,
                double productMax) const;
  /// The sum, the scale and what softmax saw, from `y` down.
  void drawSum(QPainter& painter, const QRect& area, double y, const RenderStyle& style) const;
  void updateSelectors();

  QWidget* m_bar;
  QComboBox* m_query;
  QComboBox* m_key;

  QueryKeyProducts m_products;
  QString m_problem;
  std::vector<int> m_shown;  // token positions offered in the selectors
  Layout m_lastLayout, m_screenLayout;
};

}  // namespace attnscope::render
