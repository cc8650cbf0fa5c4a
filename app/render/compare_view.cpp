// SPDX-License-Identifier: GPL-3.0-or-later
#include "compare_view.h"

#include <QBoxLayout>
#include <QComboBox>
#include <QFontMetricsF>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QToolButton>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "attnscope/error.h"
#include "attnscope/head_statistics.h"
#include "elided_combo_box.h"
#include "matrix_painter.h"
#include "palette.h"
#include "render_style.h"
#include "token_spacing.h"

namespace attnscope::render {
namespace {

bool validHead(const AttentionGroup& r, int layer, int head, int item) {
  return layer >= 0 && layer < r.layers() && head >= 0 && head < r.heads() && item >= 0 &&
         item < r.batch();
}

// "2: the cat sat…": a batch item's number and the start of its text.
QString sentenceName(const AttentionGroup& r, int item) {
  QString text;
  if (item < static_cast<int>(r.tokens.size())) {
    const std::vector<Token>& tokens = r.tokens[static_cast<std::size_t>(item)];
    // The first 80 tokens are plenty for 24 characters.
    text = joinedTokenText(tokens, 0, std::min<int>(80, int(tokens.size())) - 1, true);
  }
  QString s = text.simplified();
  if (s.size() > 24) s = s.left(23) + QStringLiteral("…");
  return QStringLiteral("%1: %2").arg(item).arg(s);
}

}  // namespace

CompareView::CompareView(QWidget* parent)
    : AttentionView(parent),
      m_bar(new QWidget(this)),
      m_layerA(new QSpinBox(m_bar)),
      m_headA(new QSpinBox(m_bar)),
      m_itemA(new ElidedComboBox(m_bar)),
      m_layerB(new QSpinBox(m_bar)),
      m_headB(new QSpinBox(m_bar)),
      m_itemB(new ElidedComboBox(m_bar)),
      m_otherSentence(new QPushButton(tr("Same head, other sentence"), m_bar)),
      m_modelB(new QToolButton(m_bar)),
      m_scroll(new QScrollBar(Qt::Vertical, this)) {
  setMouseTracking(true);
  setMinimumSize(300, 200);
  m_layerA->setObjectName(QStringLiteral("compareLayerA"));
  m_headA->setObjectName(QStringLiteral("compareHeadA"));
  m_itemA->setObjectName(QStringLiteral("compareItemA"));
  m_layerB->setObjectName(QStringLiteral("compareLayerB"));
  m_headB->setObjectName(QStringLiteral("compareHeadB"));
  m_itemB->setObjectName(QStringLiteral("compareItemB"));
  m_otherSentence->setObjectName(QStringLiteral("compareOtherSentence"));
  m_otherSentence->setToolTip(
      tr("B becomes A's layer and head on the next sentence: how one head treats two inputs"));
  // A's and B's selectors side by side, or one above the other when the view is narrow.
  m_barLayout = new QBoxLayout(QBoxLayout::LeftToRight, m_bar);
  m_barLayout->setContentsMargins(8, 4, 8, 0);
  m_barLayout->setSpacing(2);
  auto* rowA = new QHBoxLayout;
  auto* rowB = new QHBoxLayout;
  auto* rowC = new QHBoxLayout;  // B's other sources: the next sentence, another model
  m_barLayout->addLayout(rowA);
  m_barLayout->addLayout(rowB);
  m_barLayout->addLayout(rowC);
  // The bar never sets the view's minimum width: it wraps instead (resizeEvent).
  m_bar->setMinimumWidth(120);
  const auto add = [this](QHBoxLayout* row, const QString& name, QSpinBox* layer, QSpinBox* head,
                          QComboBox* item) {
    auto* label = new QLabel(name, m_bar);
    QFont bold = label->font();
    bold.setBold(true);
    label->setFont(bold);
    row->addWidget(label);
    layer->setPrefix(tr("layer "));
    head->setPrefix(tr("head "));
    layer->setToolTip(tr("Layer of %1").arg(name));
    head->setToolTip(tr("Head of %1").arg(name));
    item->setToolTip(tr("Sentence (batch item) of %1").arg(name));
    item->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    item->setMinimumContentsLength(14);
    row->addWidget(layer);
    row->addWidget(head);
    row->addWidget(item);
    row->addSpacing(12);
    connect(layer, &QSpinBox::valueChanged, this, &CompareView::emitSelection);
    connect(head, &QSpinBox::valueChanged, this, &CompareView::emitSelection);
    connect(item, &QComboBox::currentIndexChanged, this, &CompareView::emitSelection);
  };
  add(rowA, tr("A"), m_layerA, m_headA, m_itemA);
  add(rowB, tr("B"), m_layerB, m_headB, m_itemB);
  rowC->addWidget(m_otherSentence);
  // B from another model: what quantization or fine-tuning changes in each head.
  m_modelB->setObjectName(QStringLiteral("compareModelB"));
  m_modelB->setPopupMode(QToolButton::InstantPopup);
  m_modelB->setToolTip(
      tr("Head B from another model on the same text (e.g. the same model quantized), with "
         "every head's distance between the two"));
  auto* menu = new QMenu(m_modelB);
  menu->addAction(tr("This model"), this, &CompareView::otherModelCleared);
  menu->addAction(tr("Another model file (GGUF, safetensors)…"), this,
                  [this] { Q_EMIT otherModelRequested(false); });
  menu->addAction(tr("Another model folder…"), this, [this] { Q_EMIT otherModelRequested(true); });
  m_modelB->setMenu(menu);
  setOtherModelName(QString());
  rowC->addWidget(m_modelB);
  rowA->addStretch(1);
  rowB->addStretch(1);
  rowC->addStretch(1);
  connect(m_otherSentence, &QPushButton::clicked, this, &CompareView::sameHeadOtherSentence);
  setControlBar(m_bar);
  m_scroll->setObjectName(QStringLiteral("compareScroll"));
  m_scroll->hide();
  connect(m_scroll, &QScrollBar::valueChanged, this, qOverload<>(&QWidget::update));
  updateSelectors();
}

void CompareView::rebuild(Change) {
  compare();
  updateSelectors();
  updateScrollBar();
}

void CompareView::updateSelectors() {
  const ViewState& state = viewState();
  const QSignalBlocker b1(m_layerA), b2(m_headA), b3(m_itemA), b4(m_layerB), b5(m_headB),
      b6(m_itemB);
  const AttentionGroup* r = result() ? &weightsOf(*result(), state.group) : nullptr;
  const int layers = r ? r->layers() : 0, heads = r ? r->heads() : 0, batch = r ? r->batch() : 0;
  for (QSpinBox* box : {m_layerA, m_layerB}) box->setRange(0, std::max(0, layers - 1));
  for (QSpinBox* box : {m_headA, m_headB}) box->setRange(0, std::max(0, heads - 1));
  for (QComboBox* box : {m_itemA, m_itemB}) {
    if (box->count() != batch || (r && batch > 0 && box->itemText(0) != sentenceName(*r, 0))) {
      box->clear();
      for (int i = 0; i < batch; ++i) box->addItem(sentenceName(*r, i));
    } else {
      for (int i = 0; i < batch; ++i) box->setItemText(i, sentenceName(*r, i));
    }
  }
  m_layerA->setValue(state.layer);
  m_headA->setValue(state.head);
  m_itemA->setCurrentIndex(state.item < batch ? state.item : -1);
  m_layerB->setValue(state.vsLayer);
  m_headB->setValue(state.vsHead);
  m_itemB->setCurrentIndex(state.vsItem < batch ? state.vsItem : -1);
  m_bar->setEnabled(r != nullptr);
  m_otherSentence->setEnabled(batch > 1);
}

void CompareView::emitSelection() {
  ViewState s = viewState();
  s.layer = m_layerA->value();
  s.head = m_headA->value();
  if (m_itemA->currentIndex() >= 0) s.item = m_itemA->currentIndex();
  s.vsLayer = m_layerB->value();
  s.vsHead = m_headB->value();
  if (m_itemB->currentIndex() >= 0) s.vsItem = m_itemB->currentIndex();
  if (s != viewState()) Q_EMIT viewStateEdited(s);
}

void CompareView::sameHeadOtherSentence() {
  const ViewState& state = viewState();
  if (!result()) return;
  const int batch = weightsOf(*result(), state.group).batch();
  if (batch < 2) return;
  ViewState s = state;
  s.vsLayer = s.layer;
  s.vsHead = s.head;
  // The next sentence after A's; pressing again walks on through the batch.
  const int from =
      s.vsLayer == state.vsLayer && s.vsHead == state.vsHead && state.vsItem != state.item
          ? state.vsItem
          : state.item;
  s.vsItem = (from + 1) % batch;
  if (s.vsItem == s.item) s.vsItem = (s.vsItem + 1) % batch;
  Q_EMIT viewStateEdited(s);
}

void CompareView::resizeEvent(QResizeEvent* event) {
  AttentionView::resizeEvent(event);
  // A's and B's rows and B's other sources side by side need their widths, the margins and the
  // spacing; else each gets a row of its own.
  const int oneRow = m_barLayout->itemAt(0)->sizeHint().width() +
                     m_barLayout->itemAt(1)->sizeHint().width() +
                     m_barLayout->itemAt(2)->sizeHint().width() + 16 + 2 * m_barLayout->spacing();
  const QBoxLayout::Direction wanted =
      width() >= oneRow ? QBoxLayout::LeftToRight : QBoxLayout::TopToBottom;
  if (m_barLayout->direction() != wanted) m_barLayout->setDirection(wanted);
  updateScrollBar();
}

QRectF CompareView::panelRect(int panel) const {
  if (!m_valid || panel < 0 || panel > 2) return {};
  return screenLayout().cells[panel];
}

QRectF CompareView::titleRect(int panel) const {
  if (!m_valid || panel < 0 || panel > 2) return {};
  return screenLayout().titles[panel];
}

void CompareView::setOtherModelName(const QString& name) {
  m_otherName = name;
  m_modelB->setText(name.isEmpty() ? tr("B from this model") : tr("B from %1").arg(name));
  compare();
}

void CompareView::setOtherResult(ResultPtr other) {
  m_other = std::move(other);
  compare();
  updateScrollBar();
}

void CompareView::compare() {
  const ViewState& state = viewState();
  const AttentionResult* bSource = m_other ? m_other.get() : result().get();
  // Every head's distance costs L·H·T² logarithms (seconds for two 1B models at T = 1000):
  // computed once per pair of runs, group and item, not again for each click on a head.
  const DistanceKey key{result(), m_other, state.group, state.item};
  if (!(key == m_distanceKey)) {
    m_distanceKey = key;
    m_distanceProblem.clear();
    m_headDistances.clear();
    if (m_other && result()) {
      try {
        m_headDistances = headDistancesBetween(weightsOf(*result(), state.group),
                                               weightsOf(*m_other, state.group), state.item);
      } catch (const Error& e) {
        m_distanceProblem = QStringLiteral("B's model cannot be compared with A's: %1")
                                .arg(QString::fromStdString(e.what()));
      }
    }
  }
  m_problem = m_distanceProblem;
  if (!m_otherName.isEmpty() && !m_other)  // chosen, still running (or failed: see the banner)
    m_problem = tr("Head B comes from %1: waiting for its run on this text…").arg(m_otherName);
  // A head recomputed on demand past HeadMatrix::kMaxOnDemandCells is never held whole.
  if (m_problem.isEmpty() && result() &&
      tooLongOnDemand(weightsOf(*result(), state.group), state.item))
    m_problem = missingLayerMessage(result().get(), state.layer);
  m_valid = result() && bSource && m_problem.isEmpty() &&
            validHead(weightsOf(*result(), state.group), state.layer, state.head, state.item) &&
            validHead(weightsOf(*bSource, state.group), state.vsLayer, state.vsHead, state.vsItem);
  m_distance = 0;
  if (m_valid) {
    const AttentionGroup& r = weightsOf(*result(), state.group);
    // Compare weights, always: the JS distance is defined on distributions.
    m_a = HeadMatrix::of(r, state.layer, state.item, state.head, false, state.hideSpecial,
                         state.mergeWords);
    m_b = HeadMatrix::of(weightsOf(*bSource, state.group), state.vsLayer, state.vsItem,
                         state.vsHead, false, state.hideSpecial, state.mergeWords);
    m_diff = HeadMatrix::difference(m_a, m_b);
    // Over what is shown: with special tokens hidden, the renormalised rows.
    const auto view = [](const HeadMatrix& m) {
      MatrixView v;
      v.data = m.values.data();
      v.queries = m.rows;
      v.keys = m.cols;
      v.stride = m.cols;
      return v;
    };
    m_distance = meanJensenShannonDistance(view(m_a), view(m_b));
  }
  update();
}

QString CompareView::summary() const {
  if (!m_valid) return {};
  QString s = QStringLiteral(
                  "Jensen–Shannon distance %1  (base 2: 0 = same pattern, 1 = disjoint; "
                  "mean over %2 queries)")
                  .arg(MatrixPainter::formatValue(m_distance))
                  .arg(m_diff.rows);
  if (m_a.hiddenSpecial > 0 || m_b.hiddenSpecial > 0)
    s += QStringLiteral(" · ") + hiddenSpecialNote(false);
  if (!m_headDistances.empty()) {
    // Which heads the other model (a quantization, a fine-tune) changes most.
    const int heads = weightsOf(*result(), viewState().group).heads();
    std::vector<int> order;
    double sum = 0;
    for (std::size_t i = 0; i < m_headDistances.size(); ++i) {
      if (std::isnan(m_headDistances[i])) continue;
      order.push_back(static_cast<int>(i));
      sum += m_headDistances[i];
    }
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return m_headDistances[a] > m_headDistances[b]; });
    s += QStringLiteral("\nB from %1 against A's %2, every head: mean %3; most changed")
             .arg(QString::fromStdString(m_other->modelName),
                  QString::fromStdString(result()->modelName),
                  MatrixPainter::formatValue(order.empty() ? 0.0 : sum / order.size()));
    for (std::size_t i = 0; i < std::min<std::size_t>(3, order.size()); ++i)
      s += QStringLiteral(" L%1 H%2 %3")
               .arg(order[i] / heads)
               .arg(order[i] % heads)
               .arg(MatrixPainter::formatValue(m_headDistances[order[i]]));
  }
  if (m_a.rows != m_b.rows || m_a.cols != m_b.cols) {
    s += QStringLiteral(
             "\nThe items differ in length (A %1×%2, B %3×%4 tokens): compared over the "
             "common first %5 queries × %6 keys, rows renormalised.")
             .arg(m_a.rows)
             .arg(m_a.cols)
             .arg(m_b.rows)
             .arg(m_b.cols)
             .arg(m_diff.rows)
             .arg(m_diff.cols);
  }
  return s;
}

CompareView::Layout CompareView::layoutFor(const QRect& area, const RenderStyle& style,
                                           bool onScreen) const {
  // Whichever arrangement gives the larger cells: three across, A and B above A − B, or a column.
  Layout best = layoutIn(area, style, Arrangement::Across, 0);
  for (Arrangement a : {Arrangement::Stacked, Arrangement::Column}) {
    const Layout other = layoutIn(area, style, a, 0);
    if (other.cell > best.cell * 1.05) best = other;
  }
  const int rows = std::max({m_a.rows, m_b.rows, 1});
  if (!onScreen || best.cell * rows >= kMinPanelHeight) {
    // Square cells leave room along one side: the drawing sits in the middle of the page, not
    // in its top left with the rest empty.
    best.shift(QPointF(std::max(0.0, (area.right() - best.extent.right()) / 2),
                       std::max(0.0, (area.bottom() - best.extent.bottom()) / 2)));
    for (QRectF& title : best.titles) title.setRight(std::min<double>(title.right(), area.right()));
    return best;
  }
  // Too low to read: the most compact arrangement whose panels keep their height across the
  // width, taller than the canvas, which then scrolls.
  for (Arrangement a : {Arrangement::Across, Arrangement::Stacked}) {
    const Layout fixed = layoutIn(area, style, a, kMinPanelHeight);
    if (fixed.fitsWidth) return fixed;
  }
  return layoutIn(area, style, Arrangement::Column, kMinPanelHeight);
}

CompareView::Layout CompareView::layoutIn(const QRect& area, const RenderStyle& style,
                                          Arrangement arrangement, double minPanel) const {
  Layout lay;
  const QFont font = style.font(12);
  const QFontMetricsF fm(font);
  const double rowLabelA = MatrixPainter::labelWidth(m_a.rowLabels, font) + 8;
  const double rowLabelB = MatrixPainter::labelWidth(m_b.rowLabels, font) + 8;
  const double rowLabelD = MatrixPainter::labelWidth(m_diff.rowLabels, font) + 8;
  const double bar = MatrixPainter::colorBarWidth(style, 12) + 16;
  const double heading = fm.height() * 1.6;
  const double summaryHeight = QFontMetricsF(style.font(13)).height() * (m_other ? 4 : 3);
  // With another model, the per-head distance table below the summary: square cells of at most
  // 22 pixels, at least 8, in up to a third of the height.
  const AttentionGroup* g = result() ? &weightsOf(*result(), viewState().group) : nullptr;
  const int tableLayers = g && !m_headDistances.empty() ? g->layers() : 0;
  const int tableHeads = g ? g->heads() : 0;
  const double tableCell = tableLayers == 0
                               ? 0.0
                               : std::clamp(std::min((area.width() - 460.0) / tableHeads,
                                                     area.height() / 3.0 / tableLayers),
                                            8.0, 22.0);
  const double tableHeight = tableLayers == 0 ? 0.0 : tableLayers * tableCell + fm.height() + 12;
  const int rows = std::max({m_a.rows, m_b.rows, 1}), cols = std::max({m_a.cols, m_b.cols, 1});
  // Column labels need the cell width to decide on rotation: estimate with rotated labels.
  const double colLabels = std::max(MatrixPainter::labelWidth(m_a.colLabels, font),
                                    MatrixPainter::labelWidth(m_b.colLabels, font)) +
                           10;
  const bool stacked = arrangement == Arrangement::Stacked;
  const bool column = arrangement == Arrangement::Column;
  const double bands = column ? 3 : stacked ? 2 : 1;
  const double widthForCells =
      column    ? area.width() - std::max({rowLabelA, rowLabelB, rowLabelD}) - bar - 40
      : stacked ? area.width() - rowLabelA - rowLabelB - bar - 40
                : area.width() - rowLabelA - rowLabelB - rowLabelD - 2 * bar - 40;
  const double heightForCells =
      (area.height() - bands * (heading + colLabels + 12) - summaryHeight - tableHeight - 8) /
      bands;
  const double widthCell = widthForCells / ((column ? 1.0 : stacked ? 2.0 : 3.0) * cols);
  lay.cell = std::max(1.0, std::min(widthCell, heightForCells / rows));
  lay.cell = std::max(lay.cell, minPanel / rows);
  lay.fitsWidth = lay.cell <= widthCell;
  const double colHeight =
      std::max({MatrixPainter::columnLabelHeight(m_a.colLabels, lay.cell, font),
                MatrixPainter::columnLabelHeight(m_b.colLabels, lay.cell, font)});
  const HeadMatrix* m[3] = {&m_a, &m_b, &m_diff};
  const double labels[3] = {rowLabelA, rowLabelB, rowLabelD};
  double top = area.top() + heading + 8;
  double x = area.left() + 12, right = x;
  for (int i = 0; i < 3; ++i) {
    if ((stacked && i == 2) || (column && i > 0)) {
      top += lay.cell * rows + colHeight + heading + 12;
      x = area.left() + 12;
    }
    x += labels[i];
    lay.cells[i] = QRectF(x, top, lay.cell * m[i]->cols, lay.cell * m[i]->rows);
    x += lay.cell * cols + 8;
    if (i == 1) {
      lay.weightBar = QRectF(x + 4, top, 12, std::min(lay.cell * rows, 320.0));
      x += bar;
    }
    right = std::max(right, x + (i == 2 ? bar : 0));
  }
  lay.differenceBar = QRectF(x + 4, top, 12, std::min(lay.cell * rows, 320.0));
  // Each title ends where the next panel on its row begins (its row labels included).
  for (int i = 0; i < 3; ++i) {
    const bool nextOnRow = i < 2 && !column && !(stacked && i == 1);
    const double right =
        nextOnRow ? lay.cells[i + 1].left() - labels[i + 1] : double(area.right()) - 4;
    const double left = lay.cells[i].left();
    lay.titles[i] =
        QRectF(left, lay.cells[i].top() - heading - 4, std::max(0.0, right - left - 4), heading);
  }
  lay.summary = QRectF(area.left() + 12, top + lay.cell * rows + colHeight + 10, area.width() - 24,
                       summaryHeight);
  if (tableLayers > 0)
    lay.table = QRectF(area.left() + 56, lay.summary.bottom() + fm.height() + 6,
                       tableCell * tableHeads, tableCell * tableLayers);
  lay.extent = QRectF(QPointF(area.left(), area.top()),
                      QPointF(std::min<double>(right, area.right()),
                              tableLayers > 0 ? lay.table.bottom() : lay.summary.bottom()));
  return lay;
}

void CompareView::Layout::shift(const QPointF& by) {
  for (int i = 0; i < 3; ++i) {
    cells[i].translate(by);
    titles[i].translate(by);
  }
  weightBar.translate(by);
  differenceBar.translate(by);
  // The summary keeps its right edge: it wraps within the page.
  summary.adjust(by.x(), by.y(), 0, by.y());
  table.translate(by);
  extent.translate(by);
}

CompareView::Layout CompareView::screenLayout() const {
  QRect area = canvas();
  const bool scrolls = !m_scroll->isHidden();
  if (scrolls) area.setRight(area.right() - m_scroll->width());
  Layout lay = layoutFor(area, RenderStyle::forWidget(*this, viewState()), true);
  if (scrolls) {
    const QPointF shift(0, -m_scroll->value());
    for (int i = 0; i < 3; ++i) {
      lay.cells[i].translate(shift);
      lay.titles[i].translate(shift);
    }
    lay.weightBar.translate(shift);
    lay.differenceBar.translate(shift);
    lay.summary.translate(shift);
    lay.table.translate(shift);
  }
  return lay;
}

void CompareView::updateScrollBar() {
  const QRect area = canvas();
  const int w = m_scroll->sizeHint().width();
  const auto overflowIn = [this, &area](int right) {
    if (!m_valid) return 0;
    QRect inner = area;
    inner.setRight(inner.right() - right);
    const Layout lay = layoutFor(inner, RenderStyle::forWidget(*this, viewState()), true);
    return static_cast<int>(std::ceil(lay.extent.bottom() - area.bottom()));
  };
  // Without the bar if all fits; with it, the panels lose its width.
  const int overflow = overflowIn(0) > 0 ? std::max(1, overflowIn(w)) : 0;
  m_scroll->setVisible(overflow > 0);
  if (overflow > 0) {
    m_scroll->setGeometry(area.right() - w + 1, area.top(), w, area.height());
    m_scroll->setRange(0, overflow);
    m_scroll->setPageStep(area.height());
    m_scroll->setSingleStep(20);
    m_scroll->raise();
  }
}

void CompareView::wheelEvent(QWheelEvent* event) {
  if (m_scroll->isHidden()) {
    AttentionView::wheelEvent(event);
    return;
  }
  m_scroll->setValue(m_scroll->value() - event->angleDelta().y() / 2);
  event->accept();
}

void CompareView::draw(QPainter& painter, const QRect& area, const RenderStyle& style,
                       bool onScreen) {
  const ViewState& state = viewState();
  if (!m_valid) {
    style.drawMessage(painter, area,
                      !m_problem.isEmpty() ? m_problem
                      : result()           ? QStringLiteral("Head A or B is out of range")
                                           : QStringLiteral("No result yet"));
    return;
  }
  const Layout lay = onScreen ? screenLayout() : layoutFor(area, style, false);
  const Palette palette = Palette::named(state.palette);
  const double hi =
      std::max({static_cast<double>(m_a.maxValue), static_cast<double>(m_b.maxValue), 1e-6});
  const double span = std::max({std::abs(static_cast<double>(m_diff.minValue)),
                                std::abs(static_cast<double>(m_diff.maxValue)), 1e-6});
  const HeadMatrix* m[3] = {&m_a, &m_b, &m_diff};
  const QString headings[3] = {
      QStringLiteral("A · layer %1, head %2, item %3")
          .arg(state.layer)
          .arg(state.head)
          .arg(state.item),
      QStringLiteral("B · %4layer %1, head %2, item %3")
          .arg(state.vsLayer)
          .arg(state.vsHead)
          .arg(state.vsItem)
          .arg(m_other ? QString::fromStdString(m_other->modelName) + QStringLiteral(" · ")
                       : QString()),
      QStringLiteral("A − B")};
  const QFont font = style.font(12);
  for (int i = 0; i < 3; ++i) {
    const QImage cells = i < 2 ? MatrixPainter::colorize(*m[i], palette, 0, hi)
                               : MatrixPainter::colorize(*m[i], Palette::diverging(), -span, span);
    MatrixPainter::drawCells(painter, lay.cells[i], cells);
    painter.setPen(QPen(style.frame, 0));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(lay.cells[i]);
    MatrixPainter::drawRowLabels(painter, lay.cells[i], m[i]->rowLabels, font, style.text);
    MatrixPainter::drawColumnLabels(painter, lay.cells[i], m[i]->colLabels, font, style.text);
    const QFont titleFont = style.font(13, true);
    painter.setFont(titleFont);
    painter.setPen(style.text);
    // Elided to its own box, so that A's title never runs into B's.
    painter.drawText(
        lay.titles[i], Qt::AlignLeft | Qt::AlignBottom,
        QFontMetricsF(titleFont).elidedText(headings[i], Qt::ElideRight, lay.titles[i].width()));
    // Synchronised hover: the same (query, key) in every panel.
    if (m_hoverQuery >= 0 && m_hoverQuery < m[i]->rows && m_hoverKey >= 0 &&
        m_hoverKey < m[i]->cols) {
      painter.setPen(QPen(style.accent, 2));
      painter.drawRect(QRectF(lay.cells[i].left() + m_hoverKey * lay.cell,
                              lay.cells[i].top() + m_hoverQuery * lay.cell, lay.cell, lay.cell));
    }
  }
  MatrixPainter::drawColorBar(painter, lay.weightBar, palette, 0, hi, style,
                              QStringLiteral("attention weight"));
  MatrixPainter::drawColorBar(painter, lay.differenceBar, Palette::diverging(), -span, span, style,
                              QStringLiteral("A − B"));
  painter.setFont(style.font(13));
  painter.setPen(style.text);
  painter.drawText(lay.summary, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, summary());
  if (!lay.table.isEmpty()) drawHeadDistances(painter, lay.table, style);
}

void CompareView::drawHeadDistances(QPainter& painter, const QRectF& cells,
                                    const RenderStyle& style) const {
  const AttentionGroup& g = weightsOf(*result(), viewState().group);
  const int layers = g.layers(), heads = g.heads();
  const double cell = cells.width() / heads;
  double most = 1e-9;
  for (double d : m_headDistances)
    if (!std::isnan(d)) most = std::max(most, d);
  const Palette palette = Palette::named(viewState().palette);
  const QFont font = style.font(std::clamp(cell * 0.38, 8.0, 11.0));
  const QFontMetricsF fm(font);
  painter.setFont(font);
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      const QRectF r(cells.left() + h * cell, cells.top() + l * cell, cell, cell);
      const double d = m_headDistances[static_cast<std::size_t>(l) * heads + h];
      const QColor fill = std::isnan(d) ? style.frame : palette.colorAt(d / most);
      painter.fillRect(r, fill);
      const QString text = std::isnan(d) ? QStringLiteral("n/a") : QString::number(d, 'f', 2);
      if (fm.horizontalAdvance(text) + 2 <= cell && fm.height() <= cell) {
        painter.setPen(Palette::inkOn(fill));
        painter.drawText(r, Qt::AlignCenter, text);
      }
    }
  painter.setPen(QPen(style.frame, 0));
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(cells);
  const QFont labels = style.font(11);
  const QFontMetricsF lm(labels);
  painter.setFont(labels);
  painter.setPen(style.text);
  const int everyRow = std::max(1, static_cast<int>(std::ceil(lm.height() / cell)));
  for (int l = 0; l < layers; l += everyRow)
    painter.drawText(QRectF(cells.left() - 40, cells.top() + l * cell, 36, cell),
                     Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("L%1").arg(l));
  const int everyColumn = std::max(
      1, static_cast<int>(std::ceil((lm.horizontalAdvance(QStringLiteral("H00")) + 4) / cell)));
  for (int h = 0; h < heads; h += everyColumn)
    painter.drawText(
        QRectF(cells.left() + h * cell - 20, cells.top() - lm.height() - 2, cell + 40, lm.height()),
        Qt::AlignHCenter | Qt::AlignBottom, QStringLiteral("H%1").arg(h));
  painter.setPen(style.muted);
  painter.drawText(QRectF(cells.right() + 12, cells.top(), 360, lm.height() * 3),
                   Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
                   QStringLiteral("per head: mean Jensen–Shannon distance between the two models "
                                  "on this text (0 = unchanged; colour up to %1)")
                       .arg(MatrixPainter::formatValue(most)));
}

void CompareView::mouseMoveEvent(QMouseEvent* event) {
  const int oldQuery = m_hoverQuery, oldKey = m_hoverKey;
  m_hoverQuery = m_hoverKey = -1;
  if (m_valid) {
    const Layout lay = screenLayout();
    const HeadMatrix* m[3] = {&m_a, &m_b, &m_diff};
    for (int i = 0; i < 3; ++i) {
      if (!lay.cells[i].contains(event->position())) continue;
      const QPointF p = event->position() - lay.cells[i].topLeft();
      const int q = static_cast<int>(p.y() / lay.cell), k = static_cast<int>(p.x() / lay.cell);
      if (q < m[i]->rows && k < m[i]->cols) {
        m_hoverQuery = q;
        m_hoverKey = k;
      }
    }
  }
  if (m_hoverQuery >= 0) {
    QToolTip::showText(event->globalPosition().toPoint(), cellText(m_hoverQuery, m_hoverKey), this);
  } else {
    QToolTip::hideText();
  }
  if (oldQuery != m_hoverQuery || oldKey != m_hoverKey) update();
}

QString CompareView::cellText(int query, int key) const {
  if (!m_valid || query < 0 || key < 0) return {};
  // Each panel with its own tokens: B may be another sentence, whose token here differs.
  const auto part = [query, key](const QString& name, const HeadMatrix& m) {
    if (query >= m.rows || key >= m.cols) return QStringLiteral("%1: –").arg(name);
    return QStringLiteral("%1: query '%2' (%3) → key '%4' (%5): %6")
        .arg(name, m.rowTexts.value(query), m.rowPositions(query), m.colTexts.value(key),
             m.colPositions(key), MatrixPainter::formatValue(m.at(query, key)));
  };
  QString diff = QStringLiteral("A − B: –");
  if (query < m_diff.rows && key < m_diff.cols)
    diff = QStringLiteral("A − B: %1").arg(MatrixPainter::formatValue(m_diff.at(query, key)));
  return part(QStringLiteral("A"), m_a) + QLatin1Char('\n') + part(QStringLiteral("B"), m_b) +
         QLatin1Char('\n') + diff;
}

void CompareView::leaveEvent(QEvent* event) {
  m_hoverQuery = m_hoverKey = -1;
  update();
  AttentionView::leaveEvent(event);
}

}  // namespace attnscope::render
