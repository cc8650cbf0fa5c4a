// SPDX-License-Identifier: GPL-3.0-or-later
#include "logit_lens_view.h"

#include <QFontMetricsF>
#include <QFrame>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "head_matrix.h"
#include "palette.h"
#include "render_style.h"

namespace attnscope::render {

namespace {

constexpr double kLegendHeight = 34;

QString percent(double p) { return QStringLiteral("%1%").arg(100.0 * p, 0, 'f', 1); }

}  // namespace

LogitLensView::LogitLensView(QWidget* parent) : LayerPositionView(parent) {}

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
  const int shown = std::min<int>(kTipTokens, static_cast<int>(result()->logitLensIds.dim(3)));
  for (int i = 0; i < shown; ++i) {
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
  return tip + tr("\nClick for the whole distribution.");
}

double LogitLensView::entropy(int layer, int position) const {
  if (topId(layer, position) < 0) return -1;
  const FloatTensor& h = result()->logitLensEntropy;
  const std::size_t at =
      (static_cast<std::size_t>(layer) * h.dim(1) + viewState().item) * h.dim(2) + position;
  return h.rank() == 3 && at < h.data.size() ? h.data[at] : -1;
}

void LogitLensView::showDistribution(int layer, int position) {
  if (topId(layer, position) < 0) return;
  if (!m_panel) {
    m_panel = new QFrame(this, Qt::Popup);
    m_panel->setFrameShape(QFrame::StyledPanel);
    auto* layout = new QVBoxLayout(m_panel);
    m_heading = new QLabel(m_panel);
    m_heading->setWordWrap(true);
    m_heading->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_table = new QTableWidget(0, 3, m_panel);
    m_table->setHorizontalHeaderLabels({tr("#"), tr("Token"), tr("Probability")});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    layout->addWidget(m_heading);
    layout->addWidget(m_table, 1);
    m_panel->resize(340, 420);
  }
  const std::vector<Token>& tokens =
      result()->group().tokens[static_cast<std::size_t>(viewState().item)];
  const int64_t next = static_cast<std::size_t>(position) + 1 < tokens.size()
                           ? tokens[static_cast<std::size_t>(position) + 1].id
                           : -1;
  const int k = static_cast<int>(result()->logitLensIds.dim(3));
  m_table->setRowCount(0);
  double mass = 0;
  for (int i = 0; i < k; ++i) {
    const int64_t id = topId(layer, position, i);
    if (id < 0) break;
    const double p = topProbability(layer, position, i);
    mass += p;
    const int row = m_table->rowCount();
    m_table->insertRow(row);
    auto* rank = new QTableWidgetItem(QString::number(i + 1));
    auto* token = new QTableWidgetItem(tokenLabel(id));
    token->setData(Qt::UserRole, static_cast<qlonglong>(id));
    auto* probability = new QTableWidgetItem(QStringLiteral("%1%").arg(100.0 * p, 0, 'f', 2));
    probability->setData(Qt::UserRole, p);
    probability->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    if (id == next) {  // the text's next token
      QFont bold = token->font();
      bold.setBold(true);
      for (QTableWidgetItem* item : {rank, token, probability}) item->setFont(bold);
    }
    m_table->setItem(row, 0, rank);
    m_table->setItem(row, 1, token);
    m_table->setItem(row, 2, probability);
  }
  m_table->resizeColumnToContents(0);
  const double h = entropy(layer, position);
  QString heading =
      tr("Layer %1 at '%2' (position %3)%4")
          .arg(layer)
          .arg(axisLabel(QString::fromStdString(tokens[static_cast<std::size_t>(position)].label)))
          .arg(position)
          .arg(layer == layers() - 1 ? tr(", the model's own prediction") : QString());
  if (h >= 0)
    heading += tr("\nEntropy %1 nats (%2 bits, as uncertain as %3 equally likely tokens)")
                   .arg(h, 0, 'f', 3)
                   .arg(h / std::log(2.0), 0, 'f', 3)
                   .arg(std::exp(h), 0, 'f', 1);
  heading += tr("\nThe %1 most probable tokens: %2%; the rest of the vocabulary: %3%")
                 .arg(m_table->rowCount())
                 .arg(100.0 * mass, 0, 'f', 1)
                 .arg(100.0 * std::max(0.0, 1.0 - mass), 0, 'f', 1);
  m_heading->setText(heading);
  const QRectF cell = cellRect(layer, position);
  m_panel->move(
      mapToGlobal(QPoint(static_cast<int>(cell.right()) + 4, static_cast<int>(cell.top()))));
  m_panel->show();
}

QString LogitLensView::distributionHeading() const {
  return m_heading ? m_heading->text() : QString();
}

QString LogitLensView::missing() const {
  if (!result()->logitLensIds.empty()) return {};
  return tr(
      "No logit lens in this result: it is computed for causal language models with a "
      "language-model head (GPT-2, Llama, ...) while this view is open.");
}

void LogitLensView::draw(QPainter& painter, const QRect& area, const RenderStyle& style,
                         bool onScreen) {
  const int L = layers(), T = positions();
  const double sideWidth =
      QFontMetricsF(style.font(11)).horizontalAdvance(QString::number(L - 1)) + 44;
  if (!begin(painter, area, style, onScreen, sideWidth, kLegendHeight)) return;
  const std::vector<Token>& tokens = itemTokens();
  const Palette palette = Palette::named(viewState().palette);
  const double w = cells().width() / T, h = cells().height() / L;

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
  drawAxes(painter, style, onScreen,
           [L](int l) { return l == L - 1 ? tr("out %1").arg(l) : QString::number(l); });
  drawLegend(painter, style, palette);
  finish(onScreen, true);
}

void LogitLensView::drawLegend(QPainter& painter, const RenderStyle& style,
                               const Palette& palette) const {
  // The palette from 0 to 1, and what the frames mean.
  painter.setFont(style.font(11));
  const QFontMetricsF small(painter.font());
  const QRectF legend = legendRect();
  const QRectF bar(legend.left(), legend.top() + 10, std::min(220.0, legend.width() / 2), 10);
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
  painter.drawText(
      QRectF(bar.right() + 10, bar.top() - 4, legend.right() - bar.right() - 10, kLegendHeight),
      Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
      tr("probability of each layer's top token (final norm and head on its "
         "residual stream); framed: the text's next token"));
}

}  // namespace attnscope::render
