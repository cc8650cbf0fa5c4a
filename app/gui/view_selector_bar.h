// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>

#include "view_state.h"

class QCheckBox;
class QComboBox;
class QGridLayout;
class QSpinBox;

namespace attnscope::gui {

/// The row above the views that picks layer, head and batch item (bounded by the current result)
/// and the shared drawing options. It shows the document's view state and sends edits back.
class ViewSelectorBar final : public QWidget {
  Q_OBJECT
 public:
  explicit ViewSelectorBar(QWidget* parent = nullptr);

  /// Sets the ranges from the result; `texts` label the batch items.
  void setResult(const render::ResultPtr& result, const QStringList& texts);
  void setViewState(const render::ViewState& state);
  /// As narrow as the controls stacked in two rows.
  QSize minimumSizeHint() const override;
  /// Whether the controls fit on one row (else the display options go below the selection).
  bool isOneRow() const { return m_rows == 1; }

 Q_SIGNALS:
  void viewStateEdited(const attnscope::render::ViewState& state);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  /// The controls' ranges, choices and tooltips.
  void setUpControls();
  /// The selection (layer, head, sentence) and display (palette, options) groups, arranged.
  void buildGroups();
  void emitEdit();
  /// The controls on 1, 2 or 3 rows: selection, display and heatmap options side by side; the
  /// selection above the other two; or each on its own row (a narrow window).
  void arrange(int rows);

  /// Layer and head ranges of the attention kind shown (an encoder-decoder's decoder has its own).
  void updateRanges();

  render::ViewState m_state;
  render::ResultPtr m_result;
  QComboBox* m_group;  // the attention kind, for results with more than one
  QWidget* m_groupLabel;
  QSpinBox* m_layer;
  QSpinBox* m_head;
  QComboBox* m_item;
  QComboBox* m_palette;
  QCheckBox* m_scores;
  QComboBox* m_scoreTerm;  // the scores' sum or one of their terms (DeBERTa's c2c, c2p, p2c)
  QCheckBox* m_perHeadScale;
  QCheckBox* m_hideSpecial;
  QCheckBox* m_mergeWords;
  QCheckBox* m_logScale;  // heatmap: ViewState::logScale
  QCheckBox* m_dropSink;  // heatmap: ViewState::dropSink = m_sinkTokens when checked, else 0
  QSpinBox* m_sinkTokens;
  QWidget* m_selection = nullptr;       // layer, head, sentence
  QWidget* m_display = nullptr;         // palette and drawing options
  QWidget* m_heatmapOptions = nullptr;  // log scale and hidden sink: a row of their own when
                                        // the window is narrow, so 1024 pixels still fit
  QGridLayout* m_layout = nullptr;
  int m_rows = 1;
};

}  // namespace attnscope::gui
