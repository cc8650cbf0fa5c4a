// SPDX-License-Identifier: GPL-3.0-or-later
#include "query_key_view.h"

#include <QComboBox>
#include <QFontMetricsF>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QSignalBlocker>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <limits>

#include "head_matrix.h"
#include "matrix_painter.h"
#include "palette.h"
#include "render_style.h"

namespace attnscope::render {
namespace {

const char* const kRowNames[3] = {"q", "k", "q_d·k_d"};

double maxAbs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return std::max(m, 1e-12);
}

// A vertical diverging scale from −max (bottom) through 0 to +max (top), labelled at both ends
// and the middle: a symmetric scale needs no more ticks than that, and a short bar gets them too.
void drawScale(QPainter& painter, const QRectF& bar, const Palette& palette, double max,
               const QString& caption, const RenderStyle& style) {
  painter.save();
  QImage strip(1, 256, QImage::Format_RGB32);
  const QVector<unsigned int> lut = palette.lookupTable(256);
  for (int i = 0; i < 256; ++i) strip.setPixel(0, 255 - i, lut[i]);
  MatrixPainter::drawCells(painter, bar, strip);
  painter.setPen(QPen(style.frame, 0));
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(bar);
  const QFont font = style.font(11);
  const QFontMetricsF fm(font);
  painter.setFont(font);
  painter.setPen(style.text);
  const double x = bar.right() + 5;
  painter.drawText(QRectF(x, bar.top() - fm.height() / 2, 80, fm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter, MatrixPainter::formatValue(max));
  painter.drawText(QRectF(x, bar.center().y() - fm.height() / 2, 80, fm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter, QStringLiteral("0"));
  painter.drawText(QRectF(x, bar.bottom() - fm.height() / 2, 80, fm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter, MatrixPainter::formatValue(-max));
  painter.translate(x + fm.horizontalAdvance(QStringLiteral("−00.000")) + 4, bar.center().y());
  painter.rotate(-90);
  painter.setPen(style.muted);
  painter.drawText(QRectF(-bar.height() / 2 - 40, 0, bar.height() + 80, fm.height()),
                   Qt::AlignHCenter | Qt::AlignTop, caption);
  painter.restore();
}

}  // namespace

QueryKeyView::QueryKeyView(QWidget* parent)
    : AttentionView(parent),
      m_bar(new QWidget(this)),
      m_query(new QComboBox(m_bar)),
      m_key(new QComboBox(m_bar)) {
  setMouseTracking(true);
  setMinimumSize(300, 220);
  auto* bar = new QHBoxLayout(m_bar);
  bar->setContentsMargins(8, 4, 8, 0);
  m_query->setObjectName(QStringLiteral("qkQuery"));
  m_key->setObjectName(QStringLiteral("qkKey"));
  for (QComboBox* box : {m_query, m_key}) {
    box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    box->setMinimumContentsLength(16);
    box->setMaxVisibleItems(24);
  }
  bar->addWidget(new QLabel(tr("Query:"), m_bar));
  bar->addWidget(m_query);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("Key:"), m_bar));
  bar->addWidget(m_key);
  bar->addStretch(1);
  connect(m_query, &QComboBox::currentIndexChanged, this, [this](int index) {
    ViewState edited = viewState();
    edited.pinnedQuery = m_query->itemData(index).toInt();
    Q_EMIT viewStateEdited(edited);
  });
  connect(m_key, &QComboBox::currentIndexChanged, this, [this](int index) {
    ViewState edited = viewState();
    edited.pinnedKey = m_key->itemData(index).toInt();
    Q_EMIT viewStateEdited(edited);
  });
  setControlBar(m_bar);
}

void QueryKeyView::rebuild(Change) {
  m_products = QueryKeyProducts();
  m_problem.clear();
  m_shown.clear();
  update();
  const ViewState& s = viewState();
  if (!result()) {
    m_problem = QStringLiteral("No result yet");
  } else if (const AttentionGroup& g = weightsOf(*result(), s.group);
             s.layer < 0 || s.layer >= g.layers() || s.head < 0 || s.head >= g.heads() ||
             s.item < 0 || s.item >= g.batch()) {
    m_problem = QStringLiteral("Selection out of range");
  } else if (!g.hasLayer(s.layer)) {
    m_problem = missingLayerMessage(result().get(), s.layer);
  } else if (g.onDemand()) {
    m_problem = QStringLiteral(
        "This long input's attention is recomputed on demand (it did not fit the memory limit): "
        "its queries and keys are kept inside it, not for this view");
  } else if (g.queryVectors.empty() || g.keyVectors.empty()) {
    m_problem = QStringLiteral(
        "This result has no query and key vectors: they are kept when a run asks for them "
        "(RunRequest::keepQueryKey; the window does, and so does attnscope-cli export --view qk)");
  } else {
    // Token choices as the other views show them: special tokens left out when hidden.
    const HeadMatrix m = HeadMatrix::of(g, s.layer, s.item, s.head, false, s.hideSpecial);
    m_shown = m.rowTokens;
    if (m.rows == 0 || m.cols == 0) {
      m_problem = QStringLiteral("No tokens to show");
    } else {
      int row = m.rowOfToken(s.pinnedQuery);
      if (row < 0) row = m.rows - 1;  // the last token: what a decoder predicts from
      const int query = m.rowTokens[static_cast<std::size_t>(row)];
      int key = -1;
      for (int c = 0; c < m.cols; ++c)
        if (m.colTokens[static_cast<std::size_t>(c)] == s.pinnedKey) key = s.pinnedKey;
      if (key < 0) {
        int best = 0;
        for (int c = 1; c < m.cols; ++c)
          if (m.at(row, c) > m.at(row, best)) best = c;
        key = m.colTokens[static_cast<std::size_t>(best)];
      }
      QueryKeyProducts& p = m_products;
      p.query = query;
      p.key = key;
      const int hd = g.headDim();
      const float* qv = g.queryVector(s.layer, s.item, s.head, query);
      const float* kv = g.keyVector(s.layer, s.item, s.head, key);
      p.q.assign(qv, qv + hd);
      p.k.assign(kv, kv + hd);
      for (int d = 0; d < hd; ++d) {
        p.products.push_back(double(qv[d]) * kv[d]);
        p.sum += p.products.back();
      }
      p.scale = s.layer < static_cast<int>(g.queryKeyScales.size())
                    ? g.queryKeyScales[static_cast<std::size_t>(s.layer)]
                    : 0.0;
      p.softcap = s.layer < static_cast<int>(g.queryKeySoftcaps.size())
                      ? g.queryKeySoftcaps[static_cast<std::size_t>(s.layer)]
                      : 0.0;
      const std::size_t cell = static_cast<std::size_t>(query) * g.keys() + key;
      p.weight = g.headMatrix(s.layer, s.item, s.head)[cell];
      p.score = g.scores.empty() ? std::numeric_limits<double>::quiet_NaN()
                                 : g.scoreMatrix(s.layer, s.item, s.head)[cell];
      p.masked = std::isinf(p.score) && p.score < 0;
    }
  }
  updateSelectors();
}

void QueryKeyView::updateSelectors() {
  const ViewState& state = viewState();
  const QSignalBlocker b1(m_query), b2(m_key);
  m_query->clear();
  m_key->clear();
  m_query->addItem(tr("last token"), -1);
  m_key->addItem(tr("strongest key"), -1);
  if (result()) {
    const AttentionGroup& g = weightsOf(*result(), state.group);
    const QStringList queries = queryLabels(g, state.item), keys = keyLabels(g, state.item);
    for (int p : m_shown) {
      m_query->addItem(QStringLiteral("#%1 %2").arg(p).arg(axisLabel(queries.value(p))), p);
      m_key->addItem(QStringLiteral("#%1 %2").arg(p).arg(axisLabel(keys.value(p))), p);
    }
  }
  m_query->setCurrentIndex(std::max(0, m_query->findData(state.pinnedQuery)));
  m_key->setCurrentIndex(std::max(0, m_key->findData(state.pinnedKey)));
}

QueryKeyView::Layout QueryKeyView::layoutFor(const QRectF& area, const RenderStyle& style) const {
  Layout lay;
  const QFontMetricsF fm(style.font(13));
  const double top = area.top() + fm.height() * 2.6 + 12;
  const QFontMetricsF scaleFont(style.font(11));  // drawScale's labels and caption beside a bar
  const double scaleWidth =
      12 + 5 + scaleFont.horizontalAdvance(QStringLiteral("−00.000")) + 4 + scaleFont.height() + 14;
  lay.labelRight = area.left() + fm.horizontalAdvance(QStringLiteral("q_d·k_d")) + 22;
  const double right = area.right() - 2 * scaleWidth - 16;
  const double summary = fm.height() * 3.4;
  const double height = area.bottom() - top - summary - fm.height() * 2;
  const double strip = std::clamp(height * 0.12, 14.0, 48.0);
  const double gap = std::max(4.0, strip * 0.25);
  // Whole pixels per dimension where they fit, so each strip cell is a crisp column.
  const int hd = std::max<int>(1, static_cast<int>(m_products.q.size()));
  double width = std::max(40.0, right - lay.labelRight);
  if (width >= hd) width = std::floor(width / hd) * hd;
  for (int r = 0; r < 3; ++r)
    lay.strips[r] = QRectF(lay.labelRight, top + r * (strip + gap), width, strip);
  const double barsTop = lay.strips[2].bottom() + gap * 3;
  lay.bars = QRectF(lay.labelRight, barsTop, width,
                    std::max(40.0, area.bottom() - summary - fm.height() * 1.6 - barsTop));
  const double scaleX = lay.labelRight + width + 20;
  lay.vectorScale = QRectF(scaleX, top, 12, lay.strips[1].bottom() - top);
  lay.productScale =
      QRectF(scaleX + scaleWidth, lay.strips[2].top(), 12, lay.bars.bottom() - lay.strips[2].top());
  return lay;
}

QRectF QueryKeyView::stripRect(int row) const {
  return row >= 0 && row < 3 ? m_lastLayout.strips[row] : QRectF();
}

void QueryKeyView::draw(QPainter& painter, const QRect& area, const RenderStyle& style,
                        bool onScreen) {
  const ViewState& state = viewState();
  if (!m_products.valid()) {
    style.drawMessage(painter, area,
                      m_problem.isEmpty() ? QStringLiteral("Nothing to show") : m_problem);
    return;
  }
  const QueryKeyProducts& p = m_products;
  const Layout lay = layoutFor(area, style);
  m_lastLayout = lay;
  if (onScreen) m_screenLayout = lay;
  const AttentionGroup& g = weightsOf(*result(), state.group);
  const QStringList queries = queryLabels(g, state.item), keys = keyLabels(g, state.item);
  const int hd = static_cast<int>(p.q.size());

  const QFont big = style.font(13), small = style.font(11);
  const QFontMetricsF fm(big), sfm(small);
  painter.setFont(big);
  painter.setPen(style.text);
  painter.drawText(
      QRectF(area.left() + 8, area.top() + 4, area.width() - 16, fm.height()),
      Qt::AlignLeft | Qt::AlignVCenter,
      fm.elidedText(QStringLiteral("layer %1, head %2 · query '%3' (#%4) → key '%5' (#%6)")
                        .arg(state.layer)
                        .arg(state.head)
                        .arg(axisLabel(queries.value(p.query)))
                        .arg(p.query)
                        .arg(axisLabel(keys.value(p.key)))
                        .arg(p.key),
                    Qt::ElideMiddle, area.width() - 16));
  painter.setFont(small);
  painter.setPen(style.muted);
  painter.drawText(
      QRectF(area.left() + 8, area.top() + 6 + fm.height(), area.width() - 16, sfm.height() * 1.3),
      Qt::AlignLeft | Qt::AlignVCenter,
      QStringLiteral("%1 dimensions of the head · blue negative, red positive · "
                     "q and k share a scale, the products have their own")
          .arg(hd));

  // The three strips.
  const Palette diverging = Palette::diverging();
  std::vector<double> q(p.q.begin(), p.q.end()), k(p.k.begin(), p.k.end());
  const double vectorMax = std::max(maxAbs(q), maxAbs(k)), productMax = maxAbs(p.products);
  const std::vector<float> rows[3] = {p.q, p.k,
                                      std::vector<float>(p.products.begin(), p.products.end())};
  for (int r = 0; r < 3; ++r) {
    const double m = r < 2 ? vectorMax : productMax;
    MatrixPainter::drawCells(painter, lay.strips[r],
                             MatrixPainter::colorize(rows[r].data(), 1, hd, diverging, -m, m));
    painter.setPen(QPen(style.frame, 0));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(lay.strips[r]);
    painter.setFont(big);
    painter.setPen(style.text);
    painter.drawText(QRectF(area.left(), lay.strips[r].top(), lay.labelRight - area.left() - 8,
                            lay.strips[r].height()),
                     Qt::AlignRight | Qt::AlignVCenter, QString::fromUtf8(kRowNames[r]));
  }

  drawBars(painter, area, lay, style, productMax);
  drawScale(painter, lay.vectorScale, diverging, vectorMax, QStringLiteral("q_d, k_d"), style);
  drawScale(painter, lay.productScale, diverging, productMax, QStringLiteral("q_d·k_d"), style);
  drawSum(painter, area, lay.bars.bottom() + sfm.height() * 2.6, style);
}

void QueryKeyView::drawBars(QPainter& painter, const QRect& area, const Layout& lay,
                            const RenderStyle& style, double productMax) const {
  const QueryKeyProducts& p = m_products;
  const int hd = static_cast<int>(p.q.size());
  const Palette diverging = Palette::diverging();
  const QFontMetricsF sfm(style.font(11));
  // The products as bars around a zero line, coloured like their strip.
  const QRectF& B = lay.bars;
  const double cell = B.width() / hd, zero = B.center().y();
  for (int d = 0; d < hd; ++d) {
    const double v = p.products[static_cast<std::size_t>(d)];
    const double h = v / productMax * (B.height() / 2);
    const QRectF bar(B.left() + d * cell + cell * 0.1, std::min(zero, zero - h), cell * 0.8,
                     std::abs(h));
    painter.fillRect(bar, diverging.colorAt(0.5 + 0.5 * v / productMax));
    painter.setPen(QPen(style.frame, 0));
    painter.drawRect(bar);
  }
  painter.setPen(QPen(style.text, 0));
  painter.drawLine(QPointF(B.left(), zero), QPointF(B.right(), zero));
  painter.setFont(style.font(11));
  painter.drawText(QRectF(area.left(), B.top(), lay.labelRight - area.left() - 8, sfm.height()),
                   Qt::AlignRight | Qt::AlignTop, MatrixPainter::formatValue(productMax));
  painter.drawText(
      QRectF(area.left(), zero - sfm.height() / 2, lay.labelRight - area.left() - 8, sfm.height()),
      Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("0"));
  painter.drawText(QRectF(area.left(), B.bottom() - sfm.height(), lay.labelRight - area.left() - 8,
                          sfm.height()),
                   Qt::AlignRight | Qt::AlignBottom, MatrixPainter::formatValue(-productMax));
  // Dimension numbers under the bars, thinned to fit.
  const double label = sfm.horizontalAdvance(QString::number(hd)) + 6;
  const int step = std::max(1, static_cast<int>(std::ceil(label / cell)));
  const int nice = step <= 1   ? 1
                   : step <= 2 ? 2
                   : step <= 4 ? 4
                   : step <= 8 ? 8
                               : 16 * ((step + 15) / 16);
  for (int d = 0; d < hd; d += nice) {
    painter.drawText(QRectF(B.left() + (d + 0.5) * cell - 30, B.bottom() + 2, 60, sfm.height()),
                     Qt::AlignHCenter | Qt::AlignTop, QString::number(d));
  }
  painter.setPen(style.muted);
  painter.drawText(QRectF(B.left(), B.bottom() + 2 + sfm.height(), B.width(), sfm.height()),
                   Qt::AlignHCenter | Qt::AlignTop, QStringLiteral("dimension d"));
}

void QueryKeyView::drawSum(QPainter& painter, const QRect& area, double y,
                           const RenderStyle& style) const {
  const QueryKeyProducts& p = m_products;
  const QFontMetricsF fm(style.font(13));
  // The sum, the scale and what softmax saw.
  double scaled = p.sum * p.scale;
  QString line1 = QStringLiteral("Σ_d q_d·k_d = %1  ×  scale %2  =  %3")
                      .arg(MatrixPainter::formatValue(p.sum, 4))
                      .arg(MatrixPainter::formatValue(p.scale, 4))
                      .arg(MatrixPainter::formatValue(scaled, 4));
  if (p.softcap > 0) {
    // Gemma 2 caps the scaled product before the mask: the capped value is what softmax saw.
    scaled = p.softcap * std::tanh(scaled / p.softcap);
    line1 += QStringLiteral("  →  %1·tanh(·/%1) = %2")
                 .arg(MatrixPainter::formatValue(p.softcap, 4))
                 .arg(MatrixPainter::formatValue(scaled, 4));
  }
  QString line2;
  if (p.masked) {
    line2 = QStringLiteral("masked for this query (score −∞): weight 0");
  } else if (std::isnan(p.score)) {
    line2 = QStringLiteral("weight after softmax %1 (scores not kept)")
                .arg(MatrixPainter::formatValue(p.weight, 4));
  } else {
    line2 = QStringLiteral("score before softmax %1").arg(MatrixPainter::formatValue(p.score, 4));
    const double bias = p.score - scaled;
    if (std::abs(bias) > 1e-4 * std::max(1.0, std::abs(p.score)))
      line2 += QStringLiteral(" (position bias %1)").arg(MatrixPainter::formatValue(bias, 4));
    line2 +=
        QStringLiteral(" · weight after softmax %1").arg(MatrixPainter::formatValue(p.weight, 4));
  }
  painter.setFont(style.font(13));
  painter.setPen(style.text);
  painter.drawText(QRectF(area.left() + 8, y, area.width() - 16, fm.height() * 1.2),
                   Qt::AlignLeft | Qt::AlignVCenter, line1);
  painter.drawText(
      QRectF(area.left() + 8, y + fm.height() * 1.3, area.width() - 16, fm.height() * 1.2),
      Qt::AlignLeft | Qt::AlignVCenter, line2);
}

void QueryKeyView::mouseMoveEvent(QMouseEvent* event) {
  const QueryKeyProducts& p = m_products;
  const QPointF pos = event->position();
  const QRectF all = m_screenLayout.strips[0].united(m_screenLayout.bars);
  if (!p.valid() || !all.contains(pos) || all.width() <= 0) {
    QToolTip::hideText();
    return;
  }
  const int hd = static_cast<int>(p.q.size());
  const int d = std::clamp(static_cast<int>((pos.x() - all.left()) / all.width() * hd), 0, hd - 1);
  const auto i = static_cast<std::size_t>(d);
  QToolTip::showText(event->globalPosition().toPoint(),
                     tr("dimension %1: q %2 × k %3 = %4")
                         .arg(d)
                         .arg(MatrixPainter::formatValue(p.q[i], 4))
                         .arg(MatrixPainter::formatValue(p.k[i], 4))
                         .arg(MatrixPainter::formatValue(p.products[i], 4)),
                     this);
}

}  // namespace attnscope::render
