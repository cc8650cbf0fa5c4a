// SPDX-License-Identifier: GPL-3.0-or-later
#include "view_selector_bar.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>

#include <algorithm>

#include "elided_combo_box.h"
#include "head_matrix.h"

namespace attnscope::gui {

ViewSelectorBar::ViewSelectorBar(QWidget* parent)
    : QWidget(parent),
      m_group(new QComboBox(this)),
      m_groupLabel(nullptr),
      m_layer(new QSpinBox(this)),
      m_head(new QSpinBox(this)),
      m_item(new render::ElidedComboBox(this)),
      m_palette(new QComboBox(this)),
      m_scores(new QCheckBox(tr("Scores"), this)),
      m_scoreTerm(new QComboBox(this)),
      m_perHeadScale(new QCheckBox(tr("Per-head scale"), this)),
      m_hideSpecial(new QCheckBox(tr("Hide specials"), this)),
      m_mergeWords(new QCheckBox(tr("Words"), this)),
      m_logScale(new QCheckBox(tr("Log"), this)),
      m_dropSink(new QCheckBox(tr("Hide sink"), this)),
      m_sinkTokens(new QSpinBox(this)) {
  setUpControls();
  buildGroups();
  connect(m_group, &QComboBox::currentIndexChanged, this, &ViewSelectorBar::emitEdit);
  connect(m_layer, &QSpinBox::valueChanged, this, &ViewSelectorBar::emitEdit);
  connect(m_head, &QSpinBox::valueChanged, this, &ViewSelectorBar::emitEdit);
  connect(m_item, &QComboBox::currentIndexChanged, this, &ViewSelectorBar::emitEdit);
  connect(m_palette, &QComboBox::currentIndexChanged, this, &ViewSelectorBar::emitEdit);
  connect(m_scores, &QCheckBox::toggled, this, &ViewSelectorBar::emitEdit);
  connect(m_scoreTerm, &QComboBox::currentIndexChanged, this, &ViewSelectorBar::emitEdit);
  connect(m_perHeadScale, &QCheckBox::toggled, this, &ViewSelectorBar::emitEdit);
  connect(m_hideSpecial, &QCheckBox::toggled, this, &ViewSelectorBar::emitEdit);
  connect(m_mergeWords, &QCheckBox::toggled, this, &ViewSelectorBar::emitEdit);
  connect(m_logScale, &QCheckBox::toggled, this, &ViewSelectorBar::emitEdit);
  connect(m_dropSink, &QCheckBox::toggled, this, &ViewSelectorBar::emitEdit);
  connect(m_sinkTokens, &QSpinBox::valueChanged, this, [this] {
    if (m_dropSink->isChecked()) emitEdit();
  });
}

void ViewSelectorBar::setUpControls() {
  m_layer->setToolTip(tr("Layer (Alt+Up / Alt+Down)"));
  m_head->setToolTip(tr("Head (Alt+Left / Alt+Right)"));
  m_item->setToolTip(tr("Batch item: one per non-empty line of text (Alt+PgUp / Alt+PgDown)"));
  m_item->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_item->setMinimumContentsLength(12);
  m_palette->addItem(tr("Viridis"), QStringLiteral("viridis"));
  m_palette->addItem(tr("Magma"), QStringLiteral("magma"));
  m_palette->addItem(tr("Cividis"), QStringLiteral("cividis"));
  m_palette->addItem(tr("Greyscale"), QStringLiteral("greyscale"));
  m_palette->setToolTip(tr("Colour map of the attention weights"));
  m_scores->setToolTip(tr("Show the scaled scores before softmax instead of the weights"));
  m_scoreTerm->setToolTip(
      tr("With Scores: their sum (what the softmax reads) or one of its terms: content to "
         "content (c2c), content to position (c2p), position to content (p2c)"));
  m_scoreTerm->setVisible(false);  // only for models whose scores are a sum of terms
  m_perHeadScale->setToolTip(tr("Head grid: scale each cell to its own maximum"));
  m_hideSpecial->setToolTip(
      tr("Leave out the [CLS]/[SEP]/<s>/</s> rows and columns and renormalise each remaining row "
         "(Ctrl+Shift+H); the views and export titles say so"));
  m_hideSpecial->setObjectName(QStringLiteral("hideSpecialCheck"));
  m_hideSpecial->hide();  // shown for results that have special tokens
  m_mergeWords->setToolTip(
      tr("Merge subword tokens into words (Ctrl+Shift+W): a word's columns are summed, its rows "
         "averaged; the views say so"));
  m_mergeWords->setObjectName(QStringLiteral("mergeWordsCheck"));
  m_logScale->setToolTip(
      tr("Heatmap: colour the weights on a log scale, four decades below the head's largest "
         "(weak long-range attention becomes visible)"));
  m_logScale->setObjectName(QStringLiteral("logScaleCheck"));
  m_dropSink->setToolTip(
      tr("Heatmap: leave out the first keys (an attention sink) and show the "
         "rest of each row renormalised"));
  m_dropSink->setObjectName(QStringLiteral("dropSinkCheck"));
  m_sinkTokens->setRange(1, 64);
  m_sinkTokens->setValue(1);
  m_sinkTokens->setToolTip(tr("How many first keys the sink is"));
  m_sinkTokens->setObjectName(QStringLiteral("sinkTokensSpin"));
  m_layer->setRange(0, 0);
  m_head->setRange(0, 0);
}

void ViewSelectorBar::buildGroups() {
  // Two groups that sit side by side when there is room and stack when there is not (1024 px
  // screens, classroom fonts), so no control is ever cut off.
  m_selection = new QWidget(this);
  auto* first = new QHBoxLayout(m_selection);
  first->setContentsMargins(0, 0, 0, 0);
  m_group->setObjectName(QStringLiteral("attentionGroup"));
  m_group->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  // As wide as its longest choice: the sentence box beside it is the one that gives way.
  m_group->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
  m_group->setToolTip(
      tr("What the views show: the attention weights; value-weighted norms ‖α·f(x)‖, how much "
         "each key really moves the output through the head (Kobayashi et al., 2020); for an "
         "encoder-decoder the encoder's self-attention, the decoder's (causal) self-attention or "
         "the decoder's cross-attention over the source"));
  m_groupLabel = new QLabel(tr("Attention"), m_selection);
  first->addWidget(m_groupLabel);
  first->addWidget(m_group);
  first->addSpacing(8);
  m_group->hide();
  m_groupLabel->hide();
  first->addWidget(new QLabel(tr("Layer"), m_selection));
  first->addWidget(m_layer);
  first->addSpacing(8);
  first->addWidget(new QLabel(tr("Head"), m_selection));
  first->addWidget(m_head);
  first->addSpacing(8);
  first->addWidget(new QLabel(tr("Sentence"), m_selection));
  first->addWidget(m_item, 1);
  m_display = new QWidget(this);
  auto* second = new QHBoxLayout(m_display);
  second->setContentsMargins(0, 0, 0, 0);
  second->addWidget(new QLabel(tr("Palette"), m_display));
  second->addWidget(m_palette);
  second->addWidget(m_scores);
  second->addWidget(m_scoreTerm);
  second->addWidget(m_perHeadScale);
  second->addWidget(m_hideSpecial);
  second->addWidget(m_mergeWords);
  second->addStretch(1);
  m_heatmapOptions = new QWidget(this);
  auto* third = new QHBoxLayout(m_heatmapOptions);
  third->setContentsMargins(0, 0, 0, 0);
  third->addWidget(m_logScale);
  third->addWidget(m_dropSink);
  third->addWidget(m_sinkTokens);
  m_layout = new QGridLayout(this);
  m_layout->setContentsMargins(0, 0, 0, 0);
  m_layout->setVerticalSpacing(4);
  arrange(1);
}

void ViewSelectorBar::arrange(int rows) {
  if (m_layout->count() > 0 && rows == m_rows) return;
  m_rows = rows;
  m_layout->removeWidget(m_selection);
  m_layout->removeWidget(m_display);
  m_layout->removeWidget(m_heatmapOptions);
  m_layout->addWidget(m_selection, 0, 0, 1, rows == 2 ? 2 : 1);
  if (rows == 1) {
    m_layout->addWidget(m_display, 0, 1);
    m_layout->addWidget(m_heatmapOptions, 0, 2);
  } else if (rows == 2) {
    m_layout->addWidget(m_display, 1, 0);
    m_layout->addWidget(m_heatmapOptions, 1, 1);
  } else {
    m_layout->addWidget(m_display, 1, 0);
    m_layout->addWidget(m_heatmapOptions, 2, 0);
  }
  m_layout->setColumnStretch(0, 1);
  m_layout->setColumnStretch(1, 0);
  m_layout->setColumnStretch(2, 0);
}

QSize ViewSelectorBar::minimumSizeHint() const {
  // Three rows: as narrow as the widest of them.
  const QSize a = m_selection->minimumSizeHint(), b = m_display->minimumSizeHint(),
              c = m_heatmapOptions->minimumSizeHint();
  return {std::max({a.width(), b.width(), c.width()}), a.height()};
}

void ViewSelectorBar::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  const int spacing = m_layout->horizontalSpacing();
  const int selection = m_selection->sizeHint().width(), display = m_display->sizeHint().width(),
            options = m_heatmapOptions->sizeHint().width();
  const int w = width();
  arrange(w >= selection + display + options + 2 * spacing        ? 1
          : w >= std::max(selection, display + options + spacing) ? 2
                                                                  : 3);
}

void ViewSelectorBar::setResult(const render::ResultPtr& result, const QStringList& texts) {
  const QSignalBlocker b0(m_group), b1(m_layer), b2(m_head), b3(m_item);
  m_result = result;
  m_group->clear();
  const bool several = result && result->groups.size() > 1;
  if (several) {
    for (const AttentionGroup& g : result->groups) {
      const QString name = QString::fromStdString(g.name);
      const bool encoderDecoder = result->findGroup("cross") != nullptr;
      const QString label = g.name == "self" ? (encoderDecoder ? tr("Encoder self") : tr("Weights"))
                            : g.name == "decoder_self" ? tr("Decoder self")
                            : g.name == "cross"        ? tr("Cross (target → source)")
                            : g.name == "value_norm"   ? tr("Value-weighted norms")
                                                       : name;
      m_group->addItem(label, name);
    }
  }
  m_group->setVisible(several);
  m_groupLabel->setVisible(several);
  m_item->clear();
  const int batch = result ? result->group().batch() : 0;
  for (int i = 0; i < batch; ++i) {
    QString text = i < texts.size() ? texts[i].simplified() : QString();
    if (text.size() > 40) text = text.left(39) + QStringLiteral("…");
    m_item->addItem(QStringLiteral("%1: %2").arg(i).arg(text));
  }
  m_scores->setEnabled(result && !result->group().scores.empty());
  {
    const QSignalBlocker b(m_scoreTerm);
    m_scoreTerm->clear();
    const std::vector<ScoreTerm> none;
    const std::vector<ScoreTerm>& terms = result ? result->group().scoreTerms : none;
    if (!terms.empty()) m_scoreTerm->addItem(tr("Sum"), QString());
    for (const ScoreTerm& t : terms) {
      const QString name = QString::fromStdString(t.name);
      m_scoreTerm->addItem(name, name);
    }
    m_scoreTerm->setVisible(!terms.empty());
  }
  bool specials = false;
  for (int i = 0; i < batch && !specials; ++i)
    specials = render::hasSpecialTokens(result->group(), i);
  m_hideSpecial->setVisible(specials);
  setViewState(m_state);
}

void ViewSelectorBar::updateRanges() {
  const QSignalBlocker b1(m_layer), b2(m_head);
  const AttentionGroup* g = m_result ? &m_result->group(m_state.group) : nullptr;
  m_layer->setRange(0, g ? std::max(0, g->layers() - 1) : 0);
  m_head->setRange(0, g ? std::max(0, g->heads() - 1) : 0);
}

void ViewSelectorBar::setViewState(const render::ViewState& state) {
  m_state = state;
  updateRanges();
  const QSignalBlocker b0(m_group), b1(m_layer), b2(m_head), b3(m_item), b4(m_palette),
      b5(m_scores), b6(m_perHeadScale), b7(m_hideSpecial), b8(m_mergeWords), b9(m_scoreTerm),
      b10(m_logScale), b11(m_dropSink), b12(m_sinkTokens);
  if (m_group->count() > 0) {
    const int at = m_group->findData(QString::fromStdString(state.group));
    m_group->setCurrentIndex(std::max(0, at));
  }
  m_layer->setValue(state.layer);
  m_head->setValue(state.head);
  if (state.item < m_item->count()) m_item->setCurrentIndex(state.item);
  m_palette->setCurrentIndex(std::max(0, m_palette->findData(state.palette)));
  m_scores->setChecked(state.showScores);
  m_scoreTerm->setCurrentIndex(std::max(0, m_scoreTerm->findData(state.scoreTerm)));
  m_scoreTerm->setEnabled(state.showScores);
  m_perHeadScale->setChecked(state.perHeadScale);
  m_hideSpecial->setChecked(state.hideSpecial);
  m_mergeWords->setChecked(state.mergeWords);
  m_logScale->setChecked(state.logScale);
  m_dropSink->setChecked(state.dropSink > 0);
  if (state.dropSink > 0) m_sinkTokens->setValue(state.dropSink);
  m_sinkTokens->setEnabled(state.dropSink > 0);
}

void ViewSelectorBar::emitEdit() {
  render::ViewState s = m_state;
  if (m_group->count() > 0) s.group = m_group->currentData().toString().toStdString();
  s.layer = m_layer->value();
  s.head = m_head->value();
  if (m_item->currentIndex() >= 0) s.item = m_item->currentIndex();
  s.palette = m_palette->currentData().toString();
  s.showScores = m_scores->isChecked();
  if (m_scoreTerm->count() > 0) s.scoreTerm = m_scoreTerm->currentData().toString();
  s.perHeadScale = m_perHeadScale->isChecked();
  s.hideSpecial = m_hideSpecial->isChecked();
  s.mergeWords = m_mergeWords->isChecked();
  s.logScale = m_logScale->isChecked();
  s.dropSink = m_dropSink->isChecked() ? m_sinkTokens->value() : 0;
  Q_EMIT viewStateEdited(s);
}

}  // namespace attnscope::gui
