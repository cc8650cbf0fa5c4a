// SPDX-License-Identifier: GPL-3.0-or-later
#include "pipeline_view.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "palette.h"
#include "render_style.h"

namespace attnscope::render {
namespace {

constexpr double kMinBoxWidth = 88;
constexpr double kMaxBoxWidth = 260;  // longer names are elided (the hover text has them whole)
constexpr double kMinZoom = 0.2, kMaxZoom = 3.0;

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

// The sizes at which a box holds its two lines and a row its arrow labels, from the fonts.
struct Metrics {
  double boxWidth = 0, boxHeight = 0, pitch = 0;

  static Metrics of(const LayerTrace& t, const RenderStyle& style) {
    const QFontMetricsF nm(style.font(12, true)), fm(style.font(11)), lm(style.font(10));
    Metrics m;
    m.boxHeight = nm.height() + fm.height() + 8;
    m.pitch = m.boxHeight + lm.height() + 16;
    double w = kMinBoxWidth * style.fontScale;
    for (const TraceStep& s : t.steps) {
      w = std::max({w, nm.horizontalAdvance(QString::fromStdString(s.name)) + 14,
                    fm.horizontalAdvance(shapeText(s)) + 14});
    }
    m.boxWidth = std::min(w, kMaxBoxWidth * style.fontScale);
    return m;
  }
};

// The rows and lanes the diagram's boxes sit in.
struct Grid {
  std::vector<int> depth;  // [steps] row of each step
  int rows = 0;
  std::map<std::pair<int, int>, int> perCell;  // (head, depth) → steps there
  std::vector<int> shown;                      // the heads with a lane, left to right
  int laneWidthBoxes = 1;                      // boxes side by side in a lane's widest row
  int sharedWidthBoxes = 1;                    // and in the widest row of the steps all heads share
  Metrics metrics;
  double top = 0, laneWidth = 0, pitch = 0, boxHeight = 0;

  // Every head's steps in a lane while lanes fit; else the first ones (the selected head among
  // them) and a stack standing for the rest (*hiddenHeads of them).
  static Grid of(const LayerTrace& t, const QRectF& rect, const RenderStyle& style,
                 int selectedHead, int* hiddenHeads) {
    Grid g;
    g.depth = depths(t);
    g.rows = *std::max_element(g.depth.begin(), g.depth.end()) + 1;
    // Heads with their own steps, and how many boxes a lane needs side by side at most.
    std::set<int> heads;
    for (std::size_t i = 0; i < t.steps.size(); ++i) {
      g.perCell[{t.steps[i].head, g.depth[i]}]++;
      if (t.steps[i].head >= 0) heads.insert(t.steps[i].head);
    }
    for (const auto& [key, n] : g.perCell) {
      if (key.first >= 0)
        g.laneWidthBoxes = std::max(g.laneWidthBoxes, n);
      else
        g.sharedWidthBoxes = std::max(g.sharedWidthBoxes, n);
    }
    g.metrics = Metrics::of(t, style);
    const int fit = std::max(
        1, static_cast<int>(rect.width() / (g.laneWidthBoxes * (g.metrics.boxWidth + 10))));
    g.shown.assign(heads.begin(), heads.end());
    if (static_cast<int>(g.shown.size()) > fit) {
      // The first lanes, one kept for the stack; the selected head always shown.
      const int keep = std::max(1, fit - 1);
      std::vector<int> first(g.shown.begin(), g.shown.begin() + keep);
      if (heads.count(selectedHead) &&
          std::find(first.begin(), first.end(), selectedHead) == first.end()) {
        first.back() = selectedHead;
      }
      *hiddenHeads = static_cast<int>(g.shown.size()) - keep;
      g.shown = first;
    }
    const int lanes = static_cast<int>(g.shown.size()) + (*hiddenHeads > 0 ? 1 : 0);
    g.laneWidth = lanes > 0 ? rect.width() / lanes : rect.width();
    g.top = rect.top();
    g.pitch = rect.height() / g.rows;
    // The frame never lays out below the natural pitch; a smaller rect (a caller's) keeps gaps.
    g.boxHeight = std::min(g.metrics.boxHeight, g.pitch * 0.7);
    return g;
  }
  // The width at which every box and lane drawn gets its natural width.
  double naturalWidth(int hiddenHeads) const {
    const double slot = metrics.boxWidth + 10;
    const int lanes = static_cast<int>(shown.size()) + (hiddenHeads > 0 ? 1 : 0);
    return std::max(sharedWidthBoxes * slot, lanes * laneWidthBoxes * slot) + 6;
  }
  double rowTop(int d) const { return top + d * pitch + (pitch - boxHeight) / 2; }
  // Lane of a step: its head's lane, -1 for shared steps, -2 for hidden heads.
  int laneOf(int head) const {
    if (head < 0) return -1;
    const auto it = std::find(shown.begin(), shown.end(), head);
    return it == shown.end() ? -2 : static_cast<int>(it - shown.begin());
  }
};

// Whether an axis-parallel segment of `path` runs through a box other than its two ends.
bool crossesBoxes(const QPolygonF& path, const std::map<int, QRectF>& boxOf, int from, int to) {
  for (int i = 1; i < path.size(); ++i) {
    const QRectF seg = QRectF(path[i - 1], path[i]).normalized().adjusted(-1, -1, 1, 1);
    for (const auto& [step, r] : boxOf)
      if (step != from && step != to && r.intersects(seg)) return true;
  }
  return false;
}

// A path for an arrow that skips rows: out of the source's right side, down a vertical channel
// clear of every box and of the channels already taken, and into the target's right side. The
// residual stream so runs beside the column it skips instead of through its boxes.
QPolygonF channelPath(const QRectF& src, const QRectF& dst, const std::map<int, QRectF>& boxOf,
                      QVector<QRectF>& channels) {
  const double y0 = src.center().y(), y1 = dst.center().y();
  double x = std::max(src.right(), dst.right()) + 14;
  for (int tries = 0; tries < 64; ++tries, x += 8) {
    const QRectF lane(x - 4, std::min(y0, y1), 8, std::abs(y1 - y0));
    bool blocked = false;
    for (const auto& [step, r] : boxOf) blocked |= r != src && r != dst && r.intersects(lane);
    for (const QRectF& c : channels) blocked |= c.intersects(lane);
    if (!blocked) break;
  }
  channels.push_back(QRectF(x - 4, std::min(y0, y1), 8, std::abs(y1 - y0)));
  QPolygonF path;
  path << QPointF(src.right(), y0) << QPointF(x, y0) << QPointF(x, y1) << QPointF(dst.right(), y1);
  return path;
}

// Arrows: straight between neighbouring rows, else down beside the boxes and across, or (when
// that would pass through a box) in a channel of their own.
void addArrows(const LayerTrace& t, const Grid& grid, const std::map<int, QRectF>& boxOf,
               PipelineView::Layout& lay) {
  const double gap = grid.pitch - grid.boxHeight;
  QVector<QRectF> channels;
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const TraceStep& s = t.steps[i];
    const bool toHidden = grid.laneOf(s.head) == -2;
    for (int in : s.inputs) {
      if (in < 0 || static_cast<std::size_t>(in) >= i) continue;
      const bool fromHidden = grid.laneOf(t.steps[static_cast<std::size_t>(in)].head) == -2;
      if (toHidden && fromHidden) continue;  // inside the stack
      PipelineView::Arrow a;
      a.from = fromHidden ? -1 : in;
      a.to = toHidden ? -1 : static_cast<int>(i);
      // The stack stands for every hidden step: arrows meet it at the rows of the real steps.
      const int inDepth = grid.depth[static_cast<std::size_t>(in)];
      const QRectF src =
          fromHidden ? QRectF(lay.stack.center().x() - 20, grid.rowTop(inDepth), 40, grid.boxHeight)
                     : boxOf.at(in);
      const QRectF dst = toHidden ? QRectF(lay.stack.center().x() - 20, grid.rowTop(grid.depth[i]),
                                           40, grid.boxHeight)
                                  : boxOf.at(static_cast<int>(i));
      if (toHidden || fromHidden) {
        // One arrow per hidden lane would be noise: draw it once.
        bool duplicate = false;
        for (const PipelineView::Arrow& b : lay.arrows)
          duplicate |= (b.from == a.from && b.to == a.to && (a.from == -1 || a.to == -1));
        if (duplicate) continue;
      }
      const QPointF start(src.center().x(), src.bottom()), end(dst.center().x(), dst.top());
      if (grid.depth[i] - inDepth <= 1) {
        a.path << start << end;
        a.labelAt = start + (end - start) * (std::abs(start.x() - end.x()) < 1 ? 0.5 : 0.62);
      } else {
        // Down the source's column to just above the target row, then across and in.
        const double turn = dst.top() - gap * 0.45;
        a.path << start << QPointF(start.x(), turn) << QPointF(end.x(), turn) << end;
        a.labelAt = QPointF(start.x(), (start.y() + turn) / 2);
        if (std::abs(start.x() - end.x()) < 1) {
          a.path.clear();
          a.path << start << end;
          a.labelAt = start + (end - start) * 0.5;
        }
        if (crossesBoxes(a.path, boxOf, a.from, a.to)) {
          a.path = channelPath(src, dst, boxOf, channels);
          a.labelAt = QPointF(a.path[1].x(), (a.path[1].y() + a.path[2].y()) / 2);
        }
      }
      a.label = arrowLabel(s.kind);
      lay.arrows.push_back(a);
    }
  }
}

// Where lane l's "head N" label sits: the lane's bottom-left corner.
QRectF laneLabelRect(const PipelineView::Layout& lay, int l, const RenderStyle& style) {
  const QFontMetricsF fm(style.font(11, true));
  const QRectF lane = lay.lanes[l];
  const QString text = QStringLiteral("head %1").arg(lay.laneHeads[l]);
  return QRectF(lane.left() + 8, lane.bottom() - 3 - fm.height(), fm.horizontalAdvance(text),
                fm.height());
}

// The point at `fraction` of a polyline's length.
QPointF pointAlong(const QPolygonF& path, double fraction) {
  double total = 0;
  for (int i = 1; i < path.size(); ++i) total += QLineF(path[i - 1], path[i]).length();
  double left = total * fraction;
  for (int i = 1; i < path.size(); ++i) {
    const QLineF seg(path[i - 1], path[i]);
    if (left <= seg.length() && seg.length() > 0) return seg.pointAt(left / seg.length());
    left -= seg.length();
  }
  return path.isEmpty() ? QPointF() : path.back();
}

// The head lanes, the selected one in the accent colour, and the stack of hidden heads.
void drawLanes(QPainter& painter, const PipelineView::Layout& lay, const RenderStyle& style,
               int selectedHead) {
  QColor laneFill = style.muted;
  laneFill.setAlpha(18);
  QColor selectedFill = style.accent;
  selectedFill.setAlpha(26);
  painter.setFont(style.font(11, true));
  for (int l = 0; l < lay.lanes.size(); ++l) {
    const bool selected = lay.laneHeads[l] == selectedHead;
    painter.setPen(selected ? QPen(style.accent, 1.5) : Qt::NoPen);
    painter.setBrush(selected ? selectedFill : laneFill);
    painter.drawRoundedRect(lay.lanes[l], 6, 6);
    const QColor under = Palette::over(selected ? selectedFill : laneFill, style.background);
    painter.setPen(Palette::readableOn(selected ? style.accent : style.muted, under, style.text));
    painter.drawText(laneLabelRect(lay, l, style), Qt::AlignLeft | Qt::AlignVCenter,
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
}

void drawArrows(QPainter& painter, const PipelineView::Layout& lay, const RenderStyle& style) {
  const QColor arrowColor = style.muted;
  for (const PipelineView::Arrow& a : lay.arrows) {
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
}

// One box per step: its name over its shape; the selected head's steps framed in the accent.
void drawBoxes(QPainter& painter, const PipelineView::Layout& lay, const LayerTrace& t,
               const RenderStyle& style, int selectedHead) {
  const QFont nameFont = style.font(12, true), shapeFont = style.font(11);
  const QFontMetricsF nm(nameFont), fm(shapeFont);
  for (const PipelineView::Box& b : lay.boxes) {
    const TraceStep& s = t.steps[static_cast<std::size_t>(b.step)];
    const bool selected = s.head >= 0 && s.head == selectedHead;
    painter.setPen(QPen(selected ? style.accent : style.frame, selected ? 2 : 1));
    painter.setBrush(style.background);
    painter.drawRoundedRect(b.rect, 5, 5);
    // Each line gets its font's whole height (descenders and underscores included), the two
    // centred together in the box.
    const QRectF inner = b.rect.adjusted(6, 0, -6, 0);
    const double top = inner.center().y() - (nm.height() + fm.height()) / 2;
    painter.setFont(nameFont);
    painter.setPen(style.text);
    painter.drawText(QRectF(inner.left(), top, inner.width(), nm.height()), Qt::AlignCenter,
                     nm.elidedText(QString::fromStdString(s.name), Qt::ElideRight, inner.width()));
    painter.setFont(shapeFont);
    painter.setPen(style.muted);
    painter.drawText(QRectF(inner.left(), top + nm.height(), inner.width(), fm.height()),
                     Qt::AlignCenter, fm.elidedText(shapeText(s), Qt::ElideMiddle, inner.width()));
  }
}

void drawArrowLabels(QPainter& painter, const PipelineView::Layout& lay, const RenderStyle& style) {
  const QFont labelFont = style.font(10);
  painter.setFont(labelFont);
  const QFontMetricsF lm(labelFont);
  QVector<QRectF> taken;
  for (const PipelineView::Box& b : lay.boxes) taken << b.rect;
  for (int l = 0; l < lay.lanes.size(); ++l) taken << laneLabelRect(lay, l, style);
  for (const PipelineView::Arrow& a : lay.arrows) {
    const double w = lm.horizontalAdvance(a.label) + 8, h = lm.height() + 2;
    // The arrow's middle, else a third of the way from either end (an arrow leaving a lane ran
    // its label over the next lane's "head N"); fan-outs repeat one label many times: keep only
    // those that do not collide.
    QRectF r;
    for (const QPointF at : {a.labelAt, pointAlong(a.path, 0.3), pointAlong(a.path, 0.7)}) {
      const QRectF candidate(at.x() - w / 2, at.y() - h / 2, w, h);
      if (std::none_of(taken.begin(), taken.end(),
                       [&](const QRectF& o) { return o.intersects(candidate); })) {
        r = candidate;
        break;
      }
    }
    if (r.isNull()) continue;
    taken << r;
    painter.setPen(Qt::NoPen);
    painter.setBrush(style.background);
    painter.drawRoundedRect(r, 3, 3);
    painter.setPen(style.text);
    painter.drawText(r, Qt::AlignCenter, a.label);
  }
}

}  // namespace

PipelineView::PipelineView(QWidget* parent) : AttentionView(parent) {
  setMouseTracking(true);
  setMinimumSize(300, 240);
}

const LayerTrace* PipelineView::trace() const {
  if (!result() || viewState().layer < 0) return nullptr;
  // Encoder-decoders record the encoder's layers, then the decoder's: the decoder groups
  // (decoder self-attention, cross-attention) show the decoder block with its cross branch.
  const bool decoder = viewState().group == "decoder_self" ||
                       (viewState().group == "cross" && result()->findGroup("decoder_self"));
  int seen = 0;
  for (const LayerTrace& t : result()->traces) {
    if (decoder != (t.stack == "decoder")) continue;
    if (seen++ == viewState().layer) return &t;
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
  const Grid grid = Grid::of(*t, rect, style, viewState().head, &lay.hiddenHeads);
  std::map<int, QRectF> boxOf;  // step → rect
  std::map<std::pair<int, int>, int> placed;
  for (std::size_t i = 0; i < t->steps.size(); ++i) {
    const TraceStep& s = t->steps[i];
    const int lane = grid.laneOf(s.head);
    if (lane == -2) continue;
    const double left = lane < 0 ? rect.left() : rect.left() + lane * grid.laneWidth;
    const double width = lane < 0 ? rect.width() : grid.laneWidth;
    const int depth = grid.depth[i];
    const int count = grid.perCell.at({s.head, depth});
    const int slot = placed[{s.head, depth}]++;
    const double slotWidth = width / count;
    const double boxWidth = std::min(grid.metrics.boxWidth, slotWidth - 10);
    const double cx = left + slotWidth * (slot + 0.5);
    const QRectF r(cx - boxWidth / 2, grid.rowTop(depth), boxWidth, grid.boxHeight);
    boxOf[static_cast<int>(i)] = r;
    lay.boxes.push_back({static_cast<int>(i), r});
  }
  // Lane backgrounds span the rows their steps occupy.
  const QFontMetricsF fm(style.font(11));
  for (int l = 0; l < static_cast<int>(grid.shown.size()); ++l) {
    int lo = grid.rows, hi = -1;
    for (std::size_t i = 0; i < t->steps.size(); ++i) {
      if (t->steps[i].head == grid.shown[static_cast<std::size_t>(l)]) {
        lo = std::min(lo, grid.depth[i]);
        hi = std::max(hi, grid.depth[i]);
      }
    }
    // The lane's name goes under its last box, where no arrow enters.
    lay.lanes.push_back(
        QRectF(rect.left() + l * grid.laneWidth + 3, grid.rowTop(lo) - 4, grid.laneWidth - 6,
               grid.rowTop(hi) + grid.boxHeight - grid.rowTop(lo) + fm.height() + 10));
    lay.laneHeads.push_back(grid.shown[static_cast<std::size_t>(l)]);
  }
  if (lay.hiddenHeads > 0 && !lay.lanes.isEmpty()) {
    const QRectF first = lay.lanes.front();
    lay.stack = QRectF(rect.left() + grid.shown.size() * grid.laneWidth + 3, first.top(),
                       grid.laneWidth - 6, first.height());
  }
  addArrows(*t, grid, boxOf, lay);
  return lay;
}

QSizeF PipelineView::naturalSize(const RenderStyle& style, double availableWidth) const {
  const LayerTrace* t = trace();
  if (!t || t->steps.empty()) return {};
  int hidden = 0;
  const Grid grid = Grid::of(*t, QRectF(0, 0, availableWidth, 1), style, viewState().head, &hidden);
  return {grid.naturalWidth(hidden), grid.rows * grid.metrics.pitch};
}

PipelineView::Frame PipelineView::frameFor(const QRectF& area, const RenderStyle& style,
                                           bool onScreen) {
  Frame f;
  f.viewport = area;
  const QSizeF natural = naturalSize(style, area.width());
  // Never below the natural size; wider or taller views spread the rows and lanes out.
  const QSizeF size(std::max(area.width(), natural.width()),
                    std::max(area.height(), natural.height()));
  const double fit = std::min({1.0, area.width() / size.width(), area.height() / size.height()});
  const double scale = onScreen && !m_fit ? m_zoom : fit;
  f.content = size * scale;
  QPointF offset;
  if (onScreen) {
    m_pan.setX(std::clamp(m_pan.x(), 0.0, std::max(0.0, f.content.width() - area.width())));
    m_pan.setY(std::clamp(m_pan.y(), 0.0, std::max(0.0, f.content.height() - area.height())));
    offset = -m_pan;
  }
  // A diagram smaller than the view (fitted, or zoomed out) sits in its middle.
  if (f.content.width() < area.width()) offset.setX((area.width() - f.content.width()) / 2);
  if (f.content.height() < area.height()) offset.setY((area.height() - f.content.height()) / 2);
  f.toWidget.translate(area.left() + offset.x(), area.top() + offset.y());
  f.toWidget.scale(scale, scale);
  f.layout = layoutFor(QRectF(QPointF(0, 0), size), style);
  return f;
}

QSize PipelineView::minimumDrawingSize(const RenderStyle& style, int width) const {
  // An export fits the whole diagram into its page, but not below three quarters of the screen's
  // size (box names at 9 px, shapes at 8): a taller page instead of unreadable text.
  constexpr double kMinExportScale = 0.75;
  const QFontMetricsF fm(style.font(11));
  const QSizeF natural = naturalSize(style, width - 20) * kMinExportScale;
  if (natural.isEmpty()) return {};
  // The margins draw() leaves around the diagram: the caption above, the legend below.
  return QSize(static_cast<int>(std::ceil(natural.width())) + 20,
               static_cast<int>(std::ceil(natural.height() + fm.height() * 3 + 16)) + 1);
}

void PipelineView::draw(QPainter& painter, const QRect& area, const RenderStyle& style,
                        bool onScreen) {
  const LayerTrace* t = trace();
  if (!t || t->steps.empty()) {
    style.drawMessage(painter, area,
                      result() ? QStringLiteral("No trace for layer %1").arg(viewState().layer)
                               : QStringLiteral("No result yet"));
    return;
  }
  const QFontMetricsF fm(style.font(11));
  const QRectF diagram = QRectF(area).adjusted(10, fm.height() + 8, -10, -fm.height() * 2 - 8);
  const Frame frame = frameFor(diagram, style, onScreen);
  if (onScreen) m_screen = frame;
  const Layout& lay = frame.layout;
  painter.save();
  painter.setClipRect(diagram);
  painter.setTransform(frame.toWidget, /*combine=*/true);
  painter.setRenderHint(QPainter::Antialiasing, true);
  // Lanes first, under everything; arrows, then boxes on top, then arrow labels on top of all
  // (with a backing so they stay legible).
  drawLanes(painter, lay, style, viewState().head);
  drawArrows(painter, lay, style);
  drawBoxes(painter, lay, *t, style, viewState().head);
  drawArrowLabels(painter, lay, style);
  painter.restore();
  painter.setFont(style.font(11));
  painter.setPen(style.muted);
  QString caption = QStringLiteral("layer %1 · %2 attention · shapes of this run's tensors")
                        .arg(viewState().layer)
                        .arg(QString::fromStdString(t->variant));
  const bool clipped = frame.content.width() > diagram.width() + 0.5 ||
                       frame.content.height() > diagram.height() + 0.5;
  if (onScreen && clipped)
    caption +=
        QStringLiteral(" · drag or scroll for the rest, Ctrl+wheel zooms, double-click fits");
  painter.drawText(QRectF(area.left() + 10, area.top(), area.width() - 20, fm.height() + 4),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(caption, Qt::ElideRight, area.width() - 20));
  painter.drawText(
      QRectF(area.left() + 10, area.bottom() - fm.height() * 2, area.width() - 20, fm.height() * 2),
      Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap,
      QStringLiteral(
          "B = batch, T = tokens, H = heads, hd = head size · arrows are labelled with the "
          "operation that makes their target"));
}

void PipelineView::resetZoom() {
  m_zoom = 1.0;
  m_fit = false;
  m_pan = QPointF();
  update();
}

void PipelineView::setZoom(double zoom, const QPointF& anchor) {
  // The diagram's point under the anchor stays under it.
  const QPointF at = m_screen.toWidget.inverted().map(anchor);
  m_zoom = std::clamp(zoom, kMinZoom, kMaxZoom);
  m_fit = false;
  m_pan = QPointF(m_screen.viewport.left() + at.x() * m_zoom - anchor.x(),
                  m_screen.viewport.top() + at.y() * m_zoom - anchor.y());
  update();
}

void PipelineView::wheelEvent(QWheelEvent* event) {
  const QPoint delta = event->angleDelta();
  if (event->modifiers() & Qt::ControlModifier) {
    const double current = m_fit ? m_screen.toWidget.m11() : m_zoom;
    setZoom(current * std::pow(1.15, delta.y() / 120.0), event->position());
  } else {
    // A plain wheel scrolls down the rows; Shift (or a sideways wheel) across the lanes.
    const bool across = (event->modifiers() & Qt::ShiftModifier) || delta.x() != 0;
    const double step = (across && delta.x() == 0 ? delta.y() : across ? delta.x() : delta.y());
    if (across)
      m_pan.rx() -= step;
    else
      m_pan.ry() -= step;
    update();
  }
  event->accept();
}

void PipelineView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  m_dragging = true;
  m_dragFrom = event->position();
  m_panAtPress = m_pan;
}

void PipelineView::mouseReleaseEvent(QMouseEvent*) { m_dragging = false; }

void PipelineView::mouseDoubleClickEvent(QMouseEvent*) {
  m_fit = !m_fit;
  if (!m_fit) m_zoom = 1.0;
  update();
}

void PipelineView::mouseMoveEvent(QMouseEvent* event) {
  if (m_dragging && (event->buttons() & Qt::LeftButton)) {
    m_pan = m_panAtPress - (event->position() - m_dragFrom);
    update();
    return;
  }
  showHoverText(event);
}

void PipelineView::showHoverText(QMouseEvent* event) {
  const Layout& lay = m_screen.layout;
  if (!m_screen.viewport.contains(event->position())) {
    QToolTip::hideText();
    return;
  }
  const QPointF p = m_screen.toWidget.inverted().map(event->position());
  const double near = 4 / std::max(0.05, m_screen.toWidget.m11());
  QString text;
  for (const Box& b : lay.boxes)
    if (b.rect.contains(p)) text = stepText(b.step);
  if (text.isEmpty() && lay.stack.contains(p)) {
    text = QStringLiteral(
               "%1 more heads run the same steps as the lanes shown, each on its own weights.")
               .arg(lay.hiddenHeads);
  }
  const LayerTrace* t = trace();
  if (text.isEmpty() && t) {
    for (const Arrow& a : lay.arrows) {
      for (int i = 1; i < a.path.size() && text.isEmpty(); ++i) {
        if (distanceToSegment(p, a.path[i - 1], a.path[i]) < near) {
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
