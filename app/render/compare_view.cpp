// SPDX-License-Identifier: GPL-3.0-or-later
#include "compare_view.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "attnscope/head_statistics.h"
#include "matrix_painter.h"
#include "palette.h"
#include "render_style.h"

namespace attnscope::render {
namespace {

bool validHead(const AttentionGroup& r, int layer, int head, int item) {
  return layer >= 0 && layer < r.layers() && head >= 0 && head < r.heads() && item >= 0 &&
         item < r.batch();
}

}  // namespace

CompareView::CompareView(QWidget* parent) : AttentionView(parent) {
  setMouseTracking(true);
  setMinimumSize(300, 200);
}

void CompareView::setResult(ResultPtr result) {
  m_result = std::move(result);
  rebuild();
}

void CompareView::setViewState(const ViewState& state) {
  m_state = state;
  rebuild();
}

void CompareView::rebuild() {
  m_valid =
      m_result &&
      validHead(m_result->group(m_state.group), m_state.layer, m_state.head, m_state.item) &&
      validHead(m_result->group(m_state.group), m_state.vsLayer, m_state.vsHead, m_state.vsItem);
  m_distance = 0;
  if (m_valid) {
    const AttentionGroup& r = m_result->group(m_state.group);
    // Compare weights, always: the JS distance is defined on distributions.
    m_a = HeadMatrix::of(r, m_state.layer, m_state.item, m_state.head, false, m_state.hideSpecial);
    m_b = HeadMatrix::of(r, m_state.vsLayer, m_state.vsItem, m_state.vsHead, false,
                         m_state.hideSpecial);
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

CompareView::Layout CompareView::layoutFor(const QRect& area, const RenderStyle& style) const {
  Layout lay;
  const QFont font = style.font(12);
  const QFontMetricsF fm(font);
  const double rowLabelA = MatrixPainter::labelWidth(m_a.rowLabels, font) + 8;
  const double rowLabelB = MatrixPainter::labelWidth(m_b.rowLabels, font) + 8;
  const double rowLabelD = MatrixPainter::labelWidth(m_diff.rowLabels, font) + 8;
  const double bar = MatrixPainter::colorBarWidth(style, 12) + 16;
  const double heading = fm.height() * 1.6;
  const double summaryHeight = QFontMetricsF(style.font(13)).height() * 3;
  const int rows = std::max({m_a.rows, m_b.rows, 1}), cols = std::max({m_a.cols, m_b.cols, 1});
  const double widthForCells = area.width() - rowLabelA - rowLabelB - rowLabelD - 2 * bar - 40;
  // Column labels need the cell width to decide on rotation: estimate with rotated labels.
  const double colLabels = std::max(MatrixPainter::labelWidth(m_a.colLabels, font),
                                    MatrixPainter::labelWidth(m_b.colLabels, font)) +
                           10;
  const double heightForCells = area.height() - heading - colLabels - summaryHeight - 20;
  lay.cell = std::max(1.0, std::min(widthForCells / (3.0 * cols), heightForCells / rows));
  const double top = area.top() + heading + 8;
  double x = area.left() + 12;
  const HeadMatrix* m[3] = {&m_a, &m_b, &m_diff};
  const double labels[3] = {rowLabelA, rowLabelB, rowLabelD};
  for (int i = 0; i < 3; ++i) {
    x += labels[i];
    lay.cells[i] = QRectF(x, top, lay.cell * m[i]->cols, lay.cell * m[i]->rows);
    x += lay.cell * cols + 8;
    if (i == 1) {
      lay.weightBar = QRectF(x + 4, top, 12, std::min(lay.cell * rows, 320.0));
      x += bar;
    }
  }
  lay.differenceBar = QRectF(x + 4, top, 12, std::min(lay.cell * rows, 320.0));
  const double colHeight =
      std::max({MatrixPainter::columnLabelHeight(m_a.colLabels, lay.cell, font),
                MatrixPainter::columnLabelHeight(m_b.colLabels, lay.cell, font)});
  lay.summary = QRectF(area.left() + 12, top + lay.cell * rows + colHeight + 10, area.width() - 24,
                       summaryHeight);
  return lay;
}

void CompareView::renderTo(QPainter& painter, const QRect& rect, const QString& title) {
  const bool screen = painter.device() == this;
  const RenderStyle style =
      screen ? RenderStyle::forWidget(*this, m_state) : RenderStyle::forExport(m_state);
  painter.save();
  painter.fillRect(rect, style.background);
  const QRect area = style.drawTitle(painter, rect, title);
  if (!m_valid) {
    style.drawMessage(
        painter, area,
        m_result ? QStringLiteral("Head A or B is out of range") : QStringLiteral("No result yet"));
    painter.restore();
    return;
  }
  const Layout lay = layoutFor(area, style);
  const Palette palette = Palette::named(m_state.palette);
  const double hi =
      std::max({static_cast<double>(m_a.maxValue), static_cast<double>(m_b.maxValue), 1e-6});
  const double span = std::max({std::abs(static_cast<double>(m_diff.minValue)),
                                std::abs(static_cast<double>(m_diff.maxValue)), 1e-6});
  const HeadMatrix* m[3] = {&m_a, &m_b, &m_diff};
  const QString headings[3] = {QStringLiteral("A · layer %1, head %2, item %3")
                                   .arg(m_state.layer)
                                   .arg(m_state.head)
                                   .arg(m_state.item),
                               QStringLiteral("B · layer %1, head %2, item %3")
                                   .arg(m_state.vsLayer)
                                   .arg(m_state.vsHead)
                                   .arg(m_state.vsItem),
                               QStringLiteral("A − B")};
  const QFont font = style.font(12);
  const QFontMetricsF fm(font);
  for (int i = 0; i < 3; ++i) {
    const QImage cells = i < 2 ? MatrixPainter::colorize(*m[i], palette, 0, hi)
                               : MatrixPainter::colorize(*m[i], Palette::diverging(), -span, span);
    MatrixPainter::drawCells(painter, lay.cells[i], cells);
    painter.setPen(QPen(style.frame, 0));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(lay.cells[i]);
    MatrixPainter::drawRowLabels(painter, lay.cells[i], m[i]->rowLabels, font, style.text);
    MatrixPainter::drawColumnLabels(painter, lay.cells[i], m[i]->colLabels, font, style.text);
    painter.setFont(style.font(13, true));
    painter.setPen(style.text);
    painter.drawText(QRectF(lay.cells[i].left(), lay.cells[i].top() - fm.height() * 1.6 - 4,
                            std::max(lay.cells[i].width(), 240.0), fm.height() * 1.6),
                     Qt::AlignLeft | Qt::AlignBottom, headings[i]);
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
  painter.restore();
}

void CompareView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  renderTo(painter, rect(), QString());
}

void CompareView::mouseMoveEvent(QMouseEvent* event) {
  const int oldQuery = m_hoverQuery, oldKey = m_hoverKey;
  m_hoverQuery = m_hoverKey = -1;
  if (m_valid) {
    const Layout lay = layoutFor(rect(), RenderStyle::forWidget(*this, m_state));
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
    const auto value = [this](const HeadMatrix& m) {
      return m_hoverQuery < m.rows && m_hoverKey < m.cols
                 ? MatrixPainter::formatValue(m.at(m_hoverQuery, m_hoverKey))
                 : QStringLiteral("–");
    };
    const HeadMatrix& labels = m_hoverQuery < m_a.rows && m_hoverKey < m_a.cols ? m_a : m_b;
    QToolTip::showText(
        event->globalPosition().toPoint(),
        QStringLiteral("query '%1' → key '%2': A %3 · B %4 · A − B %5")
            .arg(labels.rowLabels.value(m_hoverQuery), labels.colLabels.value(m_hoverKey),
                 value(m_a), value(m_b), value(m_diff)),
        this);
  } else {
    QToolTip::hideText();
  }
  if (oldQuery != m_hoverQuery || oldKey != m_hoverKey) update();
}

void CompareView::leaveEvent(QEvent* event) {
  m_hoverQuery = m_hoverKey = -1;
  update();
  AttentionView::leaveEvent(event);
}

}  // namespace attnscope::render
