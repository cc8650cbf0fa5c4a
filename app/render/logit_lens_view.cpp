// SPDX-License-Identifier: GPL-3.0-or-later
#include "logit_lens_view.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "head_matrix.h"
#include "matrix_painter.h"
#include "palette.h"
#include "render_style.h"

namespace attnscope::render {

namespace {

constexpr double kLegendHeight = 34;

QString percent(double p) { return QStringLiteral("%1%").arg(100.0 * p, 0, 'f', 1); }

}  // namespace

LogitLensView::LogitLensView(QWidget* parent) : AttentionView(parent) { setMouseTracking(true); }

int LogitLensView::layers() const {
  return result() ? static_cast<int>(result()->logitLensIds.dim(0)) : 0;
}

int LogitLensView::positions() const {
  if (!result() || result()->logitLensIds.empty()) return 0;
  const AttentionGroup& g = result()->group();
  const int item = viewState().item;
  if (item < 0 || item >= static_cast<int>(g.tokens.size())) return 0;
  return static_cast<int>(
      std::min<std::size_t>(g.tokens[static_cast<std::size_t>(item)].size(),
                            static_cast<std::size_t>(result()->logitLensIds.dim(2))));
}

std::size_t LogitLensView::cellIndex(int layer, int position) const {
  const FloatTensor& ids = result()->logitLensIds;
  return ((static_cast<std::size_t>(layer) * ids.dim(1) + viewState().item) * ids.dim(2) +
          position) *
         ids.dim(3);
}

int64_t LogitLensView::topId(int layer, int position, int i) const {
  if (layer < 0 || layer >= layers() || position < 0 || position >= positions() || i < 0 ||
      i >= result()->logitLensIds.dim(3))
    return -1;
  return static_cast<int64_t>(result()->logitLensIds.data[cellIndex(layer, position) + i]);
}

double LogitLensView::topProbability(int layer, int position, int i) const {
  if (topId(layer, position, i) < 0) return 0;
  return result()->logitLensProbs.data[cellIndex(layer, position) + i];
}

QString LogitLensView::tokenLabel(int64_t id) const {
  const Token* t = result() ? result()->logitLensToken(id) : nullptr;
  if (!t) return QStringLiteral("#%1").arg(id);
  return axisLabel(QString::fromStdString(t->label.empty() ? t->text : t->label));
}

QString LogitLensView::cellText(int layer, int position) const {
  const int64_t id = topId(layer, position);
  return id < 0 ? QString() : tokenLabel(id);
}

QString LogitLensView::cellTip(int layer, int position) const {
  if (topId(layer, position) < 0) return {};
  const std::vector<Token>& tokens =
      result()->group().tokens[static_cast<std::size_t>(viewState().item)];
  QString tip =
      tr("Layer %1 at '%2' (position %3) predicts:")
          .arg(layer)
          .arg(axisLabel(QString::fromStdString(tokens[static_cast<std::size_t>(position)].label)))
          .arg(position);
  for (int i = 0; i < result()->logitLensIds.dim(3); ++i) {
    const int64_t id = topId(layer, position, i);
    if (id < 0) break;
    tip += QStringLiteral("\n  %1  %2")
               .arg(percent(topProbability(layer, position, i)), tokenLabel(id));
  }
  const FloatTensor& next = result()->logitLensNext;
  const std::size_t at =
      (static_cast<std::size_t>(layer) * next.dim(1) + viewState().item) * next.dim(2) + position;
  if (at < next.data.size() && next.data[at] >= 0 &&
      static_cast<std::size_t>(position) + 1 < tokens.size()) {
    tip += tr("\nThe text goes on with '%1': %2")
               .arg(axisLabel(QString::fromStdString(
                        tokens[static_cast<std::size_t>(position) + 1].label)),
                    percent(next.data[at]));
  }
  if (layer == layers() - 1) tip += tr("\n(the last layer: the model's own prediction)");
  return tip;
}

QString LogitLensView::message() const {
  if (!result()) return tr("No result yet.");
  if (result()->logitLensIds.empty())
    return tr(
        "No logit lens in this result: it is computed for causal language models with a "
        "language-model head (GPT-2, Llama, ...) while this view is open.");
  if (positions() == 0) return tr("This batch item has no tokens.");
  return {};
}

QRectF LogitLensView::cellRect(int layer, int position) const {
  const int L = layers(), T = positions();
  if (m_lastCells.isEmpty() || layer < 0 || layer >= L || position < 0 || position >= T) return {};
  const double w = m_lastCells.width() / T, h = m_lastCells.height() / L;
  // The last layer on top: the residual stream rises through the rows.
  return QRectF(m_lastCells.left() + position * w, m_lastCells.top() + (L - 1 - layer) * h, w, h);
}

void LogitLensView::rebuild(Change) {
  m_hoverLayer = m_hoverPosition = -1;
  update();
}

void LogitLensView::draw(QPainter& painter, const QRect& area, const RenderStyle& style,
                         bool onScreen) {
  m_lastCells = {};
  const QString why = message();
  if (!why.isEmpty()) {
    style.drawMessage(painter, area, why);
    if (onScreen) m_screenCells = {};
    return;
  }
  const int L = layers(), T = positions();
  const std::vector<Token>& tokens =
      result()->group().tokens[static_cast<std::size_t>(viewState().item)];
  const Palette palette = Palette::named(viewState().palette);
  const QRectF r = QRectF(area).adjusted(8, 6, -8, -6);

  // Margins: layer numbers on the left, the input tokens (turned when narrow) at the bottom.
  painter.setFont(style.font(11));
  const QFontMetricsF small(painter.font());
  const double sideWidth = small.horizontalAdvance(QString::number(L - 1)) + 44;
  double tokenWidth = 0;
  for (int t = 0; t < T; ++t)
    tokenWidth = std::max(tokenWidth, small.horizontalAdvance(axisLabel(QString::fromStdString(
                                          tokens[static_cast<std::size_t>(t)].label))));
  const double columnGuess = (r.width() - sideWidth) / T;
  const bool turned = tokenWidth + 4 > columnGuess;
  const double bottom =
      std::min(r.height() * 0.3, (turned ? std::min(tokenWidth, 140.0) : small.height()) + 8);
  m_lastCells = QRectF(r.left() + sideWidth, r.top(), r.width() - sideWidth,
                       r.height() - bottom - kLegendHeight);
  if (m_lastCells.width() < 4 || m_lastCells.height() < 4) {
    m_lastCells = {};
    style.drawMessage(painter, area, tr("The window is too small for the logit lens."));
    return;
  }
  const double w = m_lastCells.width() / T, h = m_lastCells.height() / L;

  // The cells: fill by probability, the top token written on it where it fits.
  painter.setFont(style.font(std::clamp(h * 0.45, 7.0, 13.0)));
  const QFontMetricsF cellFont(painter.font());
  const bool writeTokens = h >= cellFont.height() * 0.9;
  for (int l = 0; l < L; ++l) {
    for (int t = 0; t < T; ++t) {
      const QRectF cell = cellRect(l, t);
      const double p = topProbability(l, t);
      const QColor fill = palette.colorAt(p);
      painter.fillRect(cell, fill);
      // A whole label where it fits (one character of a character-level model in a narrow
      // column), else elided in columns wide enough for that to say something.
      const QString label = cellText(l, t);
      const bool fits = cellFont.horizontalAdvance(label) <= w - 2;
      if (writeTokens && (fits || w >= 16)) {
        painter.setPen(Palette::inkOn(fill));
        painter.drawText(cell, Qt::AlignCenter,
                         fits ? label : cellFont.elidedText(label, Qt::ElideRight, w - 4));
      }
    }
  }
  // Where the top token is the token that comes next: the model has it right at that layer.
  painter.setPen(QPen(style.accent, std::max(1.0, std::min(w, h) * 0.06)));
  for (int l = 0; l < L; ++l) {
    for (int t = 0; t + 1 < T; ++t) {
      if (topId(l, t) == tokens[static_cast<std::size_t>(t) + 1].id)
        painter.drawRect(cellRect(l, t).adjusted(1, 1, -1, -1));
    }
  }
  if (onScreen && m_hoverLayer >= 0) {
    painter.setPen(QPen(style.text, 2));
    painter.drawRect(cellRect(m_hoverLayer, m_hoverPosition));
  }
  painter.setPen(style.frame);
  painter.drawRect(m_lastCells);

  // Layer numbers, the last on top.
  painter.setFont(style.font(11));
  painter.setPen(style.text);
  const int every = std::max(1, static_cast<int>(std::ceil(small.height() / h)));
  for (int l = 0; l < L; ++l) {
    if ((L - 1 - l) % every != 0) continue;
    const QRectF row = cellRect(l, 0);
    painter.drawText(QRectF(r.left(), row.top(), sideWidth - 6, row.height()),
                     Qt::AlignRight | Qt::AlignVCenter,
                     l == L - 1 ? tr("out %1").arg(l) : QString::number(l));
  }
  // The input tokens under their columns.
  const int everyToken =
      std::max(1, static_cast<int>(std::ceil((turned ? small.height() : 0.0) / w)));
  for (int t = 0; t < T; t += everyToken) {
    const QString label = small.elidedText(
        axisLabel(QString::fromStdString(tokens[static_cast<std::size_t>(t)].label)),
        Qt::ElideRight, turned ? bottom - 6 : w - 2);
    const QRectF column = cellRect(0, t);
    if (turned) {
      painter.save();
      painter.translate(column.center().x() + small.ascent() / 2 - 1, m_lastCells.bottom() + 4);
      painter.rotate(-90);
      painter.drawText(QRectF(-(bottom - 6), -small.ascent(), bottom - 6, small.height()),
                       Qt::AlignRight | Qt::AlignVCenter, label);
      painter.restore();
    } else {
      painter.drawText(QRectF(column.left(), m_lastCells.bottom() + 3, w, small.height()),
                       Qt::AlignHCenter | Qt::AlignTop, label);
    }
  }

  // Legend: the palette from 0 to 1, and what the frames mean.
  const double y = r.bottom() - kLegendHeight + 10;
  const QRectF bar(m_lastCells.left(), y, std::min(220.0, m_lastCells.width() / 2), 10);
  for (int i = 0; i < 64; ++i)
    painter.fillRect(
        QRectF(bar.left() + bar.width() * i / 64, bar.top(), bar.width() / 64 + 0.5, bar.height()),
        palette.colorAt((i + 0.5) / 64));
  painter.setPen(style.frame);
  painter.drawRect(bar);
  painter.setPen(style.muted);
  painter.drawText(QPointF(bar.left(), bar.bottom() + small.ascent() + 2), QStringLiteral("0"));
  painter.drawText(QRectF(bar.left(), bar.bottom() + 2, bar.width(), small.height()),
                   Qt::AlignRight | Qt::AlignTop, QStringLiteral("1"));
  painter.drawText(QRectF(bar.right() + 10, bar.top() - 4, m_lastCells.right() - bar.right() - 10,
                          kLegendHeight),
                   Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
                   tr("probability of each layer's top token (final norm and head on its "
                      "residual stream); framed: the text's next token"));
  if (onScreen) m_screenCells = m_lastCells;
}

bool LogitLensView::hit(const QPointF& pos, int* layer, int* position) const {
  const int L = layers(), T = positions();
  if (m_screenCells.isEmpty() || !m_screenCells.contains(pos) || L == 0 || T == 0) return false;
  *position = std::clamp(
      static_cast<int>((pos.x() - m_screenCells.left()) / (m_screenCells.width() / T)), 0, T - 1);
  const int row = std::clamp(
      static_cast<int>((pos.y() - m_screenCells.top()) / (m_screenCells.height() / L)), 0, L - 1);
  *layer = L - 1 - row;
  return true;
}

void LogitLensView::mouseMoveEvent(QMouseEvent* event) {
  int layer = -1, position = -1;
  if (!hit(event->position(), &layer, &position)) {
    layer = position = -1;
    QToolTip::hideText();
  } else {
    QToolTip::showText(event->globalPosition().toPoint(), cellTip(layer, position), this);
  }
  if (layer != m_hoverLayer || position != m_hoverPosition) {
    m_hoverLayer = layer;
    m_hoverPosition = position;
    update();
  }
}

void LogitLensView::leaveEvent(QEvent* event) {
  m_hoverLayer = m_hoverPosition = -1;
  update();
  AttentionView::leaveEvent(event);
}

}  // namespace attnscope::render
