// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QRectF>
#include <QString>
#include <QStringList>

#include <string>
#include <vector>

#include "attention_view.h"

class QComboBox;

namespace attnscope::render {

struct HeadMatrix;
struct RenderStyle;

/// One batch item as wrapped text, each token on a box coloured by the attention it receives
/// from one query token: from the selected head, the mean over the layer's heads, or attention
/// rollout through the selected layer (ViewState::textSource). The query is the token under the
/// mouse on screen, else the selected queries (a click pins one; Ctrl click, Shift click or a drag
/// across tokens selects several, combined by ViewState::aggregate), else the last token. With
/// ViewState::mergeWords each box is a word (HeadMatrix's merge). Colours map
/// [0, the largest value of that query's row] onto the palette, with a legend; keys a causal
/// query cannot see are left unfilled. The font shrinks until the whole text fits, so a thousand
/// tokens stay readable where a 1000 × 1000 heatmap is not. Self-attention only.
class TextView final : public AttentionView {
  Q_OBJECT
 public:
  explicit TextView(QWidget* parent = nullptr);

  ViewKind kind() const override { return ViewKind::Text; }

  /// The token positions shown (special tokens left out when hidden), in reading order; of each
  /// word's first token when words are merged.
  const std::vector<int>& positions() const { return m_content.positions; }
  /// The values coloured when no token is hovered: the row of the selected query, the selected
  /// queries combined, or the last token's row. [n]; empty without a matrix.
  std::vector<double> shownRow() const;
  /// The text drawn for shown token `index`.
  QString tokenText(int index) const { return m_content.texts.value(index); }
  /// The value shown token `key` receives from shown token `query` under the current source
  /// (rows renormalised without special tokens when they are hidden); NaN without a matrix.
  double value(int query, int key) const;
  /// What the last renderTo coloured by: the query's shown index (-1: nothing drawn), the
  /// scale's top, and each token's box in that painter's coordinates.
  int lastQuery() const { return m_lastQuery; }
  double lastMax() const { return m_lastMax; }
  QRectF tokenRect(int index) const;
  /// Why nothing is drawn, or empty.
  QString problem() const { return m_content.problem; }

 protected:
  void rebuild(Change change) override;
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  struct Layout {
    std::vector<QRectF> boxes;  // [shown tokens]
    std::vector<bool> breakAfter;
    double fontPixels = 14;
    QRectF legend;
  };
  Layout layoutFor(const QRectF& area, const RenderStyle& style) const;
  bool wrap(const QRectF& area, const RenderStyle& style, double pixels, Layout* out) const;
  int hit(const QPointF& pos) const;
  /// Whose attention colours the text (`selection`, its last `query`), from what, and the scale
  /// [0, hi].
  void drawLegend(QPainter& painter, const QRectF& legend, const RenderStyle& style,
                  const std::vector<int>& selection, int query, double hi) const;
  QString sourceText() const;
  /// The shown indices of the selected queries (several, one, or none).
  std::vector<int> selectedIndices() const;

  QWidget* m_bar;
  QComboBox* m_source;

  /// All of the view state the boxes and their values depend on: contentOf sees nothing else, so
  /// a field they come to need is added here, where it also decides when they are redone.
  struct TextInputs {
    std::string group;
    int layer = 0, head = 0, item = 0;
    bool hideSpecial = false, mergeWords = false;
    TextSource textSource = TextSource::Head;
    static TextInputs of(const ViewState& state);
    bool operator==(const TextInputs& o) const;
    bool operator!=(const TextInputs& o) const { return !(*this == o); }
  };
  /// The boxes of the text and the values that colour them.
  struct Content {
    std::vector<int> positions;  // [n] token positions shown (a word's first)
    std::vector<int> lasts;      // [n] the last token position of each box
    QStringList texts;           // [n] what each box says
    QStringList labels;          // [n] readable labels (tooltips, legend)
    std::vector<bool> newline;   // [n] the token ends a line of the text
    std::vector<double> values;  // [n, n] query row, key column
    bool causal = false;         // no query attends to a later key anywhere
    int hiddenSpecial = 0;
    QString problem;  // why nothing is shown, or empty
  };
  static Content contentOf(const AttentionResult* result, const TextInputs& inputs);
  /// Content::values and causal from the selected head's matrix under the inputs' source.
  static void fillValues(const AttentionGroup& g, const TextInputs& inputs,
                         const HeadMatrix& selected, Content& content);

  TextInputs m_inputs = TextInputs::of(ViewState());  // of m_content
  Content m_content;
  int m_hover = -1;
  int m_pressed = -1;  // the box a left-button press began on (a drag selects a range)
  int m_lastQuery = -1;
  double m_lastMax = 0;
  std::vector<QRectF> m_lastBoxes, m_screenBoxes;
};

}  // namespace attnscope::render
