// SPDX-License-Identifier: GPL-3.0-or-later
#include "step_view.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "head_matrix.h"
#include "matrix_painter.h"
#include "render_style.h"

namespace attnscope::render {

namespace {

// Prompt keys and generated keys: two hues that stay apart on light and dark backgrounds and for
// the common colour-vision deficiencies (blue against orange).
const QColor kPromptColour(0x3b, 0x75, 0xaf);
const QColor kGeneratedColour(0xe0, 0x7b, 0x1a);

constexpr double kStepLabelWidth = 34;
constexpr double kStepHeaderHeight = 18;
constexpr double kMeanGap = 10;

QString stepQuoted(const Token& t) {
  return QStringLiteral("'%1'").arg(
      axisLabel(QString::fromStdString(t.label.empty() ? t.text : t.label)));
}

}  // namespace

StepView::StepView(QWidget* parent) : AttentionView(parent) { setMouseTracking(true); }

void StepView::setFrame(const GenerationFrame& frame) {
  m_frame = frame;
  rebuild(Change::Result);
}

int StepView::layers() const {
  return m_frame.empty() ? 0 : static_cast<int>(m_frame.step->attention.shape[0]);
}
int StepView::heads() const {
  return m_frame.empty() ? 0 : static_cast<int>(m_frame.step->attention.shape[1]);
}
int StepView::keys() const {
  return m_frame.empty() ? 0 : static_cast<int>(m_frame.step->attention.shape[2]);
}

double StepView::weight(int layer, int head, int key) const {
  const int L = layers(), H = heads(), T = keys();
  if (layer < 0 || layer >= L || head < 0 || head > H || key < 0 || key >= T) return 0;
  if (head == H) return m_mean[static_cast<std::size_t>(layer * T + key)];
  const auto at = (static_cast<std::size_t>(layer) * static_cast<std::size_t>(H) +
                   static_cast<std::size_t>(head)) *
                      static_cast<std::size_t>(T) +
                  static_cast<std::size_t>(key);
  return m_frame.step->attention.data[at];
}

QString StepView::message() const {
  if (!m_frame.step)
    return tr(
        "No generation step: press Step or Play in the Generate bar under the text "
        "(decoder models).");
  if (m_frame.empty()) return tr("This step kept no attention.");
  return {};
}

QRectF StepView::stripRect(int layer, int head) const {
  const int L = layers(), H = heads();
  if (m_lastCells.isEmpty() || layer < 0 || layer >= L || head < 0 || head > H) return {};
  const double w = (m_lastCells.width() - m_gap) / (H + 1), h = m_lastCells.height() / L;
  const double x = m_lastCells.left() + head * w + (head == H ? m_gap : 0);
  return QRectF(x, m_lastCells.top() + layer * h, w, h);
}

void StepView::rebuild(Change change) {
  if (change == Change::Result) {
    m_mean.clear();
    const int L = layers(), H = heads(), T = keys();
    m_mean.assign(static_cast<std::size_t>(L) * static_cast<std::size_t>(T), 0.0f);
    for (int l = 0; l < L; ++l) {
      for (int t = 0; t < T; ++t) {
        double sum = 0;
        for (int h = 0; h < H; ++h) sum += weight(l, h, t);
        m_mean[static_cast<std::size_t>(l * T + t)] = static_cast<float>(sum / H);
      }
    }
  }
  update();
}

QString StepView::probabilityText(double p) {
  if (p > 0 && p < 0.0005) return QString::number(p, 'g', 2);
  return MatrixPainter::formatValue(p, 3);
}

QString StepView::caption() const {
  const GenerationStep& s = *m_frame.step;
  double p = 0;
  for (const GenerationCandidate& c : s.candidates) {
    if (c.token.id == s.token.id) p = c.pModel;
  }
  const int T = keys();
  const QString query = T > 0 && T <= static_cast<int>(m_frame.tokens.size())
                            ? stepQuoted(m_frame.tokens[static_cast<std::size_t>(T - 1)])
                            : QString();
  return tr("Step %1 of %2: after %3 the model wrote %4 (p %5%6). Bars: the attention of %3 "
            "over the %7 tokens so far, per layer (rows) and head.")
      .arg(m_frame.index + 1)
      .arg(m_frame.count)
      .arg(query, stepQuoted(s.token), probabilityText(p), s.forced ? tr(", forced") : QString())
      .arg(T);
}

void StepView::draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) {
  m_lastCells = {};
  const QString why = message();
  if (!why.isEmpty()) {
    style.drawMessage(painter, area, why);
    if (onScreen) m_screenCells = {};
    return;
  }
  const int L = layers(), H = heads(), T = keys();
  const QRectF r = QRectF(area).adjusted(8, 6, -8, -6);

  // Caption, then the legend.
  painter.setFont(style.font(12));
  painter.setPen(style.text);
  const QFontMetricsF fm(painter.font());
  QRectF text = r;
  const QRectF captionBox =
      fm.boundingRect(text, Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop, caption());
  painter.drawText(text, Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop, caption());
  double y = captionBox.bottom() + 4;
  double x = r.left();
  const auto legend = [&](const QColor& c, const QString& label) {
    painter.fillRect(QRectF(x, y + 3, 10, 10), c);
    painter.setPen(style.muted);
    painter.drawText(QPointF(x + 14, y + fm.ascent()), label);
    x += 14 + fm.horizontalAdvance(label) + 16;
  };
  legend(kPromptColour, tr("prompt token"));
  legend(kGeneratedColour, tr("generated token"));
  legend(Qt::transparent, viewState().perHeadScale ? tr("height: √(weight / the strip's largest)")
                                                   : tr("height: √weight (0.01 shows as a tenth)"));
  y += fm.height() + 6;

  // The strips: label column on the left, head numbers above.
  m_gap = kMeanGap;
  const QRectF cells(r.left() + kStepLabelWidth, y + kStepHeaderHeight, r.width() - kStepLabelWidth,
                     r.bottom() - y - kStepHeaderHeight);
  if (cells.width() < 20 || cells.height() < 10) return;
  m_lastCells = cells;
  const double h = cells.height() / L;
  painter.setFont(style.font(std::clamp(h * 0.45, 8.0, 12.0)));
  painter.setPen(style.muted);
  for (int head = 0; head <= H; ++head) {
    const QRectF s = stripRect(0, head);
    const QString label = head == H ? tr("mean") : QStringLiteral("H%1").arg(head);
    painter.drawText(QRectF(s.left(), y, s.width(), kStepHeaderHeight), Qt::AlignCenter, label);
  }
  for (int layer = 0; layer < L; ++layer) {
    const QRectF s = stripRect(layer, 0);
    painter.drawText(QRectF(r.left(), s.top(), kStepLabelWidth - 4, s.height()),
                     Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("L%1").arg(layer));
  }
  const int prompt = m_frame.promptLength;
  for (int layer = 0; layer < L; ++layer) {
    for (int head = 0; head <= H; ++head) {
      const QRectF s = stripRect(layer, head).adjusted(2, 2, -2, -2);
      painter.setPen(QPen(style.frame, 0.5));
      painter.setBrush(Qt::NoBrush);
      painter.drawRect(s);
      const double bw = s.width() / T;
      // A square-root scale, so that attention spread thinly over many keys still shows; per
      // head scale stretches each strip to its own largest weight.
      double top = 1;
      if (viewState().perHeadScale) {
        top = 0;
        for (int key = 0; key < T; ++key) top = std::max(top, weight(layer, head, key));
      }
      for (int key = 0; key < T; ++key) {
        const double v = top > 0 ? std::clamp(weight(layer, head, key) / top, 0.0, 1.0) : 0.0;
        const double bh = std::sqrt(v) * s.height();
        if (bh <= 0) continue;
        // Bars at least a pixel wide when there are many keys: they then overlap a little.
        painter.fillRect(QRectF(s.left() + key * bw, s.bottom() - bh, std::max(bw - 0.5, 0.8), bh),
                         key < prompt ? kPromptColour : kGeneratedColour);
      }
    }
  }
  // The selected head, as in the other views.
  const ViewState& state = viewState();
  if (state.layer < L && state.head < H) {
    painter.setPen(QPen(style.accent, 1.5));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(stripRect(state.layer, state.head).adjusted(1, 1, -1, -1));
  }
  if (onScreen) m_screenCells = m_lastCells;
}

bool StepView::hit(const QPointF& pos, int* layer, int* head, int* key) const {
  const int L = layers(), H = heads(), T = keys();
  if (m_screenCells.isEmpty() || L == 0 || !m_screenCells.contains(pos)) return false;
  const double w = (m_screenCells.width() - m_gap) / (H + 1), h = m_screenCells.height() / L;
  const double dx = pos.x() - m_screenCells.left();
  int col = static_cast<int>(dx / w);
  double within = dx - col * w;
  if (col >= H) {  // the mean column, after the gap
    if (dx < H * w + m_gap) return false;
    col = H;
    within = dx - H * w - m_gap;
  }
  *layer = std::clamp(static_cast<int>((pos.y() - m_screenCells.top()) / h), 0, L - 1);
  *head = col;
  *key = std::clamp(static_cast<int>((within - 2) / ((w - 4) / T)), 0, T - 1);
  return true;
}

void StepView::mouseMoveEvent(QMouseEvent* event) {
  int l = 0, h = 0, k = 0;
  if (!hit(event->position(), &l, &h, &k)) {
    QToolTip::hideText();
    return;
  }
  const bool generatedKey = k >= m_frame.promptLength;
  const QString token = k < static_cast<int>(m_frame.tokens.size())
                            ? stepQuoted(m_frame.tokens[static_cast<std::size_t>(k)])
                            : QString();
  QToolTip::showText(event->globalPosition().toPoint(),
                     tr("layer %1, %2\nkey #%3 %4 (%5)\nweight %6")
                         .arg(l)
                         .arg(h == heads() ? tr("mean over heads") : tr("head %1").arg(h))
                         .arg(k)
                         .arg(token, generatedKey ? tr("generated") : tr("prompt"),
                              MatrixPainter::formatValue(weight(l, h, k), 4)),
                     this);
}

void StepView::mouseReleaseEvent(QMouseEvent* event) {
  int l = 0, h = 0, k = 0;
  if (event->button() == Qt::LeftButton && hit(event->position(), &l, &h, &k) && h < heads())
    Q_EMIT headActivated(l, h);
}

}  // namespace attnscope::render
