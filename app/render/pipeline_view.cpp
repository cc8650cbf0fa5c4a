// SPDX-License-Identifier: GPL-3.0-or-later
#include "pipeline_view.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "render_style.h"

namespace attnscope::render {
namespace {

constexpr double kMinBoxWidth = 88;

QString shapeText(const TraceStep& s) {
  return QString::fromStdString(FloatTensor::formatShape(s.shape));
}

QString arrowLabel(const std::string& kind) {
  const TraceStepKind* k = findTraceStepKind(kind);
  return QString::fromStdString(k ? k->arrow : kind);
}

// Depth of every step: 0 without inputs, else one more than its deepest input.
std::vector<int> depths(const LayerTrace& t) {
  std::vector<int> d(t.steps.size(), 0);
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    for (int in : t.steps[i].inputs) {
      // Inputs come before their users in a trace; anything else is ignored rather than looping.
      if (in >= 0 && static_cast<std::size_t>(in) < i)
        d[i] = std::max(d[i], d[static_cast<std::size_t>(in)] + 1);
    }
  }
  return d;
}

double distanceToSegment(const QPointF& p, const QPointF& a, const QPointF& b) {
  const QPointF ab = b - a;
  const double len2 = QPointF::dotProduct(ab, ab);
  const double t = len2 > 0 ? std::clamp(QPointF::dotProduct(p - a, ab) / len2, 0.0, 1.0) : 0.0;
  const QPointF q = a + t * ab - p;
  return std::sqrt(QPointF::dotProduct(q, q));
}

}  // namespace

PipelineView::PipelineView(QWidget* parent) : AttentionView(parent) {
  setMouseTracking(true);
  setMinimumSize(300, 240);
}

void PipelineView::setResult(ResultPtr result) {
  m_result = std::move(result);
  update();
}

void PipelineView::setViewState(const ViewState& state) {
  m_state = state;
  update();
}

const LayerTrace* PipelineView::trace() const {
  if (!m_result || m_state.layer < 0) return nullptr;
  // Encoder-decoders record the encoder's layers, then the decoder's: the decoder groups
  // (decoder self-attention, cross-attention) show the decoder block with its cross branch.
  const bool decoder = m_state.group == "decoder_self" ||
                       (m_state.group == "cross" && m_result->findGroup("decoder_self"));
  int seen = 0;
  for (const LayerTrace& t : m_result->traces) {
    if (decoder != (t.stack == "decoder")) continue;
    if (seen++ == m_state.layer) return &t;
  }
  return nullptr;
}

QString PipelineView::explain(const QString& kind) {
  // The sentences live with the step kinds in the core, so a new kind is explained where it is
  // defined.
  const TraceStepKind* k = findTraceStepKind(kind.toStdString());
  return k ? QString::fromStdString(k->explanation) : QStringLiteral("A %1 step.").arg(kind);
}

QString PipelineView::stepText(int index) const {
  const LayerTrace* t = trace();
  if (!t || index < 0 || index >= static_cast<int>(t->steps.size())) return {};
  const TraceStep& s = t->steps[static_cast<std::size_t>(index)];
  QString where = s.head >= 0 ? QStringLiteral(" (head %1)").arg(s.head) : QString();
  return QStringLiteral("%1%2: %3\nPyTorch: %4  →  %5")
      .arg(QString::fromStdString(s.name), where, explain(QString::fromStdString(s.kind)),
           QString::fromStdString(s.op), shapeText(s));
}

PipelineView::Layout PipelineView::layoutFor(const QRectF& rect, const RenderStyle& style) const {
  Layout lay;
  const LayerTrace* t = trace();
  if (!t || t->steps.empty()) return lay;
  const std::vector<int> depth = depths(*t);
  const int rows = *std::max_element(depth.begin(), depth.end()) + 1;
  // Heads with their own steps, and how many boxes a lane needs side by side at most.
  std::set<int> heads;
  std::map<std::pair<int, int>, int> perCell;  // (head, depth) → steps there
  for (std::size_t i = 0; i < t->steps.size(); ++i) {
    perCell[{t->steps[i].head, depth[i]}]++;
    if (t->steps[i].head >= 0) heads.insert(t->steps[i].head);
  }
  int laneWidthBoxes = 1;
  for (const auto& [key, n] : perCell)
    if (key.first >= 0) laneWidthBoxes = std::max(laneWidthBoxes, n);
  const double minBox = kMinBoxWidth * style.fontScale;
  const int fit = std::max(1, static_cast<int>(rect.width() / (laneWidthBoxes * (minBox + 10))));
  std::vector<int> shown(heads.begin(), heads.end());
  if (static_cast<int>(shown.size()) > fit) {
    // The first lanes, one kept for the stack; the selected head always shown.
    const int keep = std::max(1, fit - 1);
    std::vector<int> first(shown.begin(), shown.begin() + keep);
    if (heads.count(m_state.head) &&
        std::find(first.begin(), first.end(), m_state.head) == first.end()) {
      first.back() = m_state.head;
    }
    lay.hiddenHeads = static_cast<int>(shown.size()) - keep;
    shown = first;
  }
  const int lanes = static_cast<int>(shown.size()) + (lay.hiddenHeads > 0 ? 1 : 0);
  const double laneWidth = lanes > 0 ? rect.width() / lanes : rect.width();
  const QFontMetricsF fm(style.font(11));
  const double pitch = rect.height() / rows;
  const double boxHeight = std::min(fm.height() * 2.6, pitch * 0.62);
  const auto rowTop = [&](int d) { return rect.top() + d * pitch + (pitch - boxHeight) / 2; };

  std::map<int, QRectF> boxOf;  // step → rect
  std::map<std::pair<int, int>, int> placed;
  // Lane of a step: its head's lane, -1 for shared steps, -2 for hidden heads.
  const auto laneOf = [&](int head) {
    if (head < 0) return -1;
    const auto it = std::find(shown.begin(), shown.end(), head);
    return it == shown.end() ? -2 : static_cast<int>(it - shown.begin());
  };
  for (std::size_t i = 0; i < t->steps.size(); ++i) {
    const TraceStep& s = t->steps[i];
    const int lane = laneOf(s.head);
    if (lane == -2) continue;
    const double left = lane < 0 ? rect.left() : rect.left() + lane * laneWidth;
    const double width = lane < 0 ? rect.width() : laneWidth;
    const int count = perCell[{s.head, depth[i]}];
    const int slot = placed[{s.head, depth[i]}]++;
    const double slotWidth = width / count;
    const double boxWidth = std::min(190.0 * style.fontScale, slotWidth - 10);
    const double cx = left + slotWidth * (slot + 0.5);
    const QRectF r(cx - boxWidth / 2, rowTop(depth[i]), boxWidth, boxHeight);
    boxOf[static_cast<int>(i)] = r;
    lay.boxes.push_back({static_cast<int>(i), r});
  }
  // Lane backgrounds span the rows their steps occupy.
  for (int l = 0; l < static_cast<int>(shown.size()); ++l) {
    int lo = rows, hi = -1;
    for (std::size_t i = 0; i < t->steps.size(); ++i) {
      if (t->steps[i].head == shown[static_cast<std::size_t>(l)]) {
        lo = std::min(lo, depth[i]);
        hi = std::max(hi, depth[i]);
      }
    }
    // The lane's name goes under its last box, where no arrow enters.
    lay.lanes.push_back(QRectF(rect.left() + l * laneWidth + 3, rowTop(lo) - 4, laneWidth - 6,
                               rowTop(hi) + boxHeight - rowTop(lo) + fm.height() + 10));
    lay.laneHeads.push_back(shown[static_cast<std::size_t>(l)]);
  }
  if (lay.hiddenHeads > 0 && !lay.lanes.isEmpty()) {
    const QRectF first = lay.lanes.front();
    lay.stack = QRectF(rect.left() + shown.size() * laneWidth + 3, first.top(), laneWidth - 6,
                       first.height());
  }
  // Arrows: straight between neighbouring rows, else down beside the boxes and across.
  const double gap = pitch - boxHeight;
  for (std::size_t i = 0; i < t->steps.size(); ++i) {
    const TraceStep& s = t->steps[i];
    const bool toHidden = laneOf(s.head) == -2;
    for (int in : s.inputs) {
      if (in < 0 || static_cast<std::size_t>(in) >= i) continue;
      const bool fromHidden = laneOf(t->steps[static_cast<std::size_t>(in)].head) == -2;
      if (toHidden && fromHidden) continue;  // inside the stack
      Arrow a;
      a.from = fromHidden ? -1 : in;
      a.to = toHidden ? -1 : static_cast<int>(i);
      // The stack stands for every hidden step: arrows meet it at the rows of the real steps.
      const QRectF src = fromHidden
                             ? QRectF(lay.stack.center().x() - 20,
                                      rowTop(depth[static_cast<std::size_t>(in)]), 40, boxHeight)
                             : boxOf[in];
      const QRectF dst = toHidden
                             ? QRectF(lay.stack.center().x() - 20, rowTop(depth[i]), 40, boxHeight)
                             : boxOf[static_cast<int>(i)];
      if (toHidden || fromHidden) {
        // One arrow per hidden lane would be noise: draw it once.
        bool duplicate = false;
        for (const Arrow& b : lay.arrows)
          duplicate |= (b.from == a.from && b.to == a.to && (a.from == -1 || a.to == -1));
        if (duplicate) continue;
      }
      const QPointF start(src.center().x(), src.bottom()), end(dst.center().x(), dst.top());
      if (depth[i] - depth[static_cast<std::size_t>(in)] <= 1 ||
          std::abs(start.x() - end.x()) < 1) {
        a.path << start << end;
        a.labelAt = start + (end - start) * (std::abs(start.x() - end.x()) < 1 ? 0.5 : 0.62);
      } else {
        // Down the source's column to just above the target row, then across and in.
        const double turn = dst.top() - gap * 0.45;
        a.path << start << QPointF(start.x(), turn) << QPointF(end.x(), turn) << end;
        a.labelAt = QPointF(start.x(), (start.y() + turn) / 2);
      }
      a.label = arrowLabel(s.kind);
      lay.arrows.push_back(a);
    }
  }
  return lay;
}

void PipelineView::renderTo(QPainter& painter, const QRect& rect, const QString& title) {
  const RenderStyle style = painter.device() == this ? RenderStyle::forWidget(*this, m_state)
                                                     : RenderStyle::forExport(m_state);
  painter.save();
  painter.fillRect(rect, style.background);
  const QRect area = style.drawTitle(painter, rect, title);
  const LayerTrace* t = trace();
  if (!t || t->steps.empty()) {
    style.drawMessage(painter, area,
                      m_result ? QStringLiteral("No trace for layer %1").arg(m_state.layer)
                               : QStringLiteral("No result yet"));
    painter.restore();
    return;
  }
  const QFont nameFont = style.font(12, true), shapeFont = style.font(11),
              labelFont = style.font(10);
  const QFontMetricsF fm(shapeFont);
  const QRectF diagram = QRectF(area).adjusted(10, fm.height() + 8, -10, -fm.height() * 2 - 8);
  const Layout lay = layoutFor(diagram, style);
  painter.setRenderHint(QPainter::Antialiasing, true);

  // Lanes first, under everything.
  QColor laneFill = style.muted;
  laneFill.setAlpha(18);
  QColor selectedFill = style.accent;
  selectedFill.setAlpha(26);
  painter.setFont(style.font(11, true));
  for (int l = 0; l < lay.lanes.size(); ++l) {
    const bool selected = lay.laneHeads[l] == m_state.head;
    painter.setPen(selected ? QPen(style.accent, 1.5) : Qt::NoPen);
    painter.setBrush(selected ? selectedFill : laneFill);
    painter.drawRoundedRect(lay.lanes[l], 6, 6);
    painter.setPen(selected ? style.accent : style.muted);
    painter.drawText(lay.lanes[l].adjusted(8, 0, -8, -3), Qt::AlignLeft | Qt::AlignBottom,
                     QStringLiteral("head %1").arg(lay.laneHeads[l]));
  }
  if (!lay.stack.isEmpty()) {
    // A few offset cards: the hidden heads repeat the lanes' steps.
    for (int k = 2; k >= 0; --k) {
      painter.setPen(QPen(style.frame, 1));
      painter.setBrush(style.background);
      painter.drawRoundedRect(lay.stack.translated(k * 5, k * 5).adjusted(0, 0, -10, -10), 6, 6);
    }
    painter.setPen(style.text);
    painter.setFont(style.font(12, true));
    painter.drawText(lay.stack.adjusted(8, 8, -18, -18), Qt::AlignCenter | Qt::TextWordWrap,
                     QStringLiteral("… %1 more heads\n(the same steps)").arg(lay.hiddenHeads));
  }

  // Arrows, then boxes on top, then arrow labels on top of all (with a backing so they stay
  // legible).
  const QColor arrowColor = style.muted;
  for (const Arrow& a : lay.arrows) {
    painter.setPen(QPen(arrowColor, 1.2));
    painter.setBrush(Qt::NoBrush);
    painter.drawPolyline(a.path);
    const QPointF tip = a.path.back(), before = a.path[a.path.size() - 2];
    const double angle = std::atan2(tip.y() - before.y(), tip.x() - before.x());
    const double size = 6;
    QPolygonF head;
    head << tip << tip - QPointF(std::cos(angle - 0.45) * size, std::sin(angle - 0.45) * size)
         << tip - QPointF(std::cos(angle + 0.45) * size, std::sin(angle + 0.45) * size);
    painter.setBrush(arrowColor);
    painter.setPen(Qt::NoPen);
    painter.drawPolygon(head);
  }
  for (const Box& b : lay.boxes) {
    const TraceStep& s = t->steps[static_cast<std::size_t>(b.step)];
    const bool selected = s.head >= 0 && s.head == m_state.head;
    painter.setPen(QPen(selected ? style.accent : style.frame, selected ? 2 : 1));
    painter.setBrush(style.background);
    painter.drawRoundedRect(b.rect, 5, 5);
    const QRectF inner = b.rect.adjusted(4, 2, -4, -2);
    painter.setFont(nameFont);
    painter.setPen(style.text);
    const QFontMetricsF nm(nameFont);
    painter.drawText(QRectF(inner.left(), inner.top(), inner.width(), inner.height() / 2),
                     Qt::AlignCenter,
                     nm.elidedText(QString::fromStdString(s.name), Qt::ElideRight, inner.width()));
    painter.setFont(shapeFont);
    painter.setPen(style.muted);
    painter.drawText(QRectF(inner.left(), inner.center().y(), inner.width(), inner.height() / 2),
                     Qt::AlignCenter, fm.elidedText(shapeText(s), Qt::ElideMiddle, inner.width()));
  }
  painter.setFont(labelFont);
  const QFontMetricsF lm(labelFont);
  QVector<QRectF> taken;
  for (const Box& b : lay.boxes) taken << b.rect;
  for (const Arrow& a : lay.arrows) {
    const double w = lm.horizontalAdvance(a.label) + 8, h = lm.height() + 2;
    const QRectF r(a.labelAt.x() - w / 2, a.labelAt.y() - h / 2, w, h);
    // Fan-outs repeat one label many times: keep only those that do not collide.
    if (std::any_of(taken.begin(), taken.end(), [&](const QRectF& o) { return o.intersects(r); }))
      continue;
    taken << r;
    painter.setPen(Qt::NoPen);
    painter.setBrush(style.background);
    painter.drawRoundedRect(r, 3, 3);
    painter.setPen(style.text);
    painter.drawText(r, Qt::AlignCenter, a.label);
  }
  painter.setFont(style.font(11));
  painter.setPen(style.muted);
  painter.drawText(QRectF(area.left() + 10, area.top(), area.width() - 20, fm.height() + 4),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   QStringLiteral("layer %1 · %2 attention · shapes of this run's tensors")
                       .arg(m_state.layer)
                       .arg(QString::fromStdString(t->variant)));
  painter.drawText(
      QRectF(area.left() + 10, area.bottom() - fm.height() * 2, area.width() - 20, fm.height() * 2),
      Qt::AlignLeft | Qt::AlignVCenter,
      QStringLiteral(
          "B = batch, T = tokens, H = heads, hd = head size · arrows are labelled with the "
          "operation that makes their target"));
  painter.restore();
}

void PipelineView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  renderTo(painter, rect(), QString());
}

void PipelineView::mouseMoveEvent(QMouseEvent* event) {
  const RenderStyle style = RenderStyle::forWidget(*this, m_state);
  const QFontMetricsF fm(style.font(11));
  const QRectF diagram = QRectF(rect()).adjusted(10, fm.height() + 8, -10, -fm.height() * 2 - 8);
  const Layout lay = layoutFor(diagram, style);
  const QPointF p = event->position();
  QString text;
  for (const Box& b : lay.boxes)
    if (b.rect.contains(p)) text = stepText(b.step);
  if (text.isEmpty() && lay.stack.contains(p)) {
    text = QStringLiteral(
               "%1 more heads run the same steps as the lanes shown, each on its own weights.")
               .arg(lay.hiddenHeads);
  }
  if (text.isEmpty()) {
    const LayerTrace* t = trace();
    for (const Arrow& a : lay.arrows) {
      for (int i = 1; i < a.path.size() && text.isEmpty(); ++i) {
        if (distanceToSegment(p, a.path[i - 1], a.path[i]) < 4 && t) {
          const int to = a.to >= 0 ? a.to : a.from;
          const TraceStep& s = t->steps[static_cast<std::size_t>(to)];
          const QString from =
              a.from >= 0 ? QString::fromStdString(t->steps[static_cast<std::size_t>(a.from)].name)
                          : QStringLiteral("hidden heads");
          text = QStringLiteral("%1 → %2: %3\nPyTorch: %4")
                     .arg(from, QString::fromStdString(s.name),
                          explain(QString::fromStdString(s.kind)), QString::fromStdString(s.op));
        }
      }
    }
  }
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

}  // namespace attnscope::render
