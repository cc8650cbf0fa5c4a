// SPDX-License-Identifier: GPL-3.0-or-later
#include "experts_view.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>

#include "palette.h"
#include "render_style.h"

namespace attnscope::render {

namespace {

constexpr double kExpertLegendHeight = 40;

}  // namespace

ExpertsView::ExpertsView(QWidget* parent) : LayerPositionView(parent) {}

int ExpertsView::layers() const {
  return result() && !result()->routerExperts.empty()
             ? static_cast<int>(result()->routerExperts.dim(0))
             : 0;
}

int ExpertsView::positions() const {
  if (layers() == 0) return 0;
  const AttentionGroup& g = result()->group();
  const int item = viewState().item;
  if (item < 0 || item >= static_cast<int>(g.tokens.size()) ||
      item >= result()->routerExperts.dim(1))
    return 0;
  return static_cast<int>(
      std::min<std::size_t>(g.tokens[static_cast<std::size_t>(item)].size(),
                            static_cast<std::size_t>(result()->routerExperts.dim(2))));
}

int ExpertsView::chosen() const {
  return layers() > 0 ? static_cast<int>(result()->routerExperts.dim(3)) : 0;
}

int ExpertsView::experts() const {
  if (layers() == 0) return 0;
  float most = -1;
  for (float e : result()->routerExperts.data) most = std::max(most, e);
  return static_cast<int>(most) + 1;
}

std::size_t ExpertsView::cellIndex(int layer, int position) const {
  const FloatTensor& e = result()->routerExperts;
  return ((static_cast<std::size_t>(layer) * e.dim(1) + viewState().item) * e.dim(2) + position) *
         e.dim(3);
}

int ExpertsView::expert(int layer, int position, int i) const {
  if (layer < 0 || layer >= layers() || position < 0 || position >= positions() || i < 0 ||
      i >= chosen())
    return -1;
  return static_cast<int>(result()->routerExperts.data[cellIndex(layer, position) + i]);
}

double ExpertsView::weight(int layer, int position, int i) const {
  if (expert(layer, position, i) < 0) return 0;
  return result()->routerWeights.data[cellIndex(layer, position) + i];
}

QColor ExpertsView::expertColour(int expert) { return Palette::categorical(expert); }

QString ExpertsView::cellTip(int layer, int position) const {
  if (layer < 0 || layer >= layers() || position < 0 || position >= positions()) return {};
  const Token& t = itemTokens()[static_cast<std::size_t>(position)];
  QString tip = tr("Layer %1, '%2' (position %3):").arg(layer).arg(tokenText(t)).arg(position);
  if (expert(layer, position, 0) < 0) return tip + tr("\n  a dense layer: no router");
  for (int i = 0; i < chosen(); ++i)
    tip += tr("\n  expert %1  weight %2")
               .arg(expert(layer, position, i))
               .arg(weight(layer, position, i), 0, 'f', 3);
  return tip;
}

QString ExpertsView::missing() const {
  if (!result()->routerExperts.empty()) return {};
  return tr(
      "No expert routing in this result: the Experts view shows which experts a "
      "mixture-of-experts model (Mixtral, Qwen-MoE, OLMoE) sends each token to.");
}

void ExpertsView::draw(QPainter& painter, const QRect& area, const RenderStyle& style,
                       bool onScreen) {
  const int L = layers(), T = positions();
  const double sideWidth =
      QFontMetricsF(style.font(11)).horizontalAdvance(QStringLiteral("layer %1").arg(L - 1)) + 12;
  if (!begin(painter, area, style, onScreen, sideWidth, kExpertLegendHeight)) return;
  const double h = cells().height() / L;
  painter.setFont(style.font(std::clamp(h * 0.4, 7.5, 12.0)));
  const QFontMetricsF cellFont(painter.font());
  QColor dense = style.frame;
  dense.setAlpha(90);
  for (int l = 0; l < L; ++l)
    for (int t = 0; t < T; ++t) drawCell(painter, l, t, cellFont, dense);
  // The selected layer's row.
  const int selected = std::clamp(viewState().layer, 0, L - 1);
  painter.setPen(QPen(style.accent, 2));
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(QRectF(cells().left(), cellRect(selected, 0).top(), cells().width(), h));
  drawAxes(painter, style, onScreen, [](int l) { return QStringLiteral("layer %1").arg(l); });
  drawLegend(painter, style);
  finish(onScreen, true);
}

void ExpertsView::drawCell(QPainter& painter, int layer, int position, const QFontMetricsF& font,
                           const QColor& dense) const {
  const QRectF cell = cellRect(layer, position).adjusted(0.5, 0.5, -0.5, -0.5);
  if (expert(layer, position, 0) < 0) {
    painter.fillRect(cell, dense);
    return;
  }
  // Its experts side by side, each as wide as its share of the chosen weight.
  const int K = chosen();
  double total = 0;
  for (int i = 0; i < K; ++i) total += std::max(0.0, weight(layer, position, i));
  double x = cell.left();
  for (int i = 0; i < K; ++i) {
    const int e = expert(layer, position, i);
    if (e < 0) continue;
    const double share = total > 0 ? std::max(0.0, weight(layer, position, i)) / total : 1.0 / K;
    const QRectF part(x, cell.top(), cell.width() * share, cell.height());
    x = part.right();
    const QColor fill = expertColour(e);
    painter.fillRect(part, fill);
    const QString label = QString::number(e);
    if (font.horizontalAdvance(label) + 2 <= part.width() && font.height() <= part.height()) {
      painter.setPen(Palette::inkOn(fill));
      painter.drawText(part, Qt::AlignCenter, label);
    }
  }
}

void ExpertsView::drawLegend(QPainter& painter, const RenderStyle& style) const {
  // One swatch per expert while they fit on a line, then the sentence saying how to read it.
  const QRectF rect = legendRect().adjusted(0, 8, 0, 0);
  painter.setFont(style.font(10));
  const QFontMetricsF fm(painter.font());
  const int n = experts();
  const double swatch = fm.height();
  double x = rect.left();
  const double y = rect.top();
  int shown = 0;
  for (int e = 0; e < n; ++e) {
    const QString label = QString::number(e);
    const double width = swatch + 3 + fm.horizontalAdvance(label) + 8;
    if (x + width > rect.right()) break;
    painter.fillRect(QRectF(x, y, swatch, swatch), expertColour(e));
    painter.setPen(style.text);
    painter.drawText(QRectF(x + swatch + 3, y, width, swatch), Qt::AlignLeft | Qt::AlignVCenter,
                     label);
    x += width;
    ++shown;
  }
  painter.setPen(style.muted);
  const QString how =
      tr("each token's %1 chosen expert(s) per layer, as wide as their routing weight%2; "
         "grey: a dense layer")
          .arg(chosen())
          .arg(shown < n ? tr(" (experts %1–%2 by number only)").arg(shown).arg(n - 1) : QString());
  painter.drawText(QRectF(rect.left(), y + swatch + 3, rect.width(), fm.height() + 2),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(how, Qt::ElideRight, rect.width()));
}

}  // namespace attnscope::render
