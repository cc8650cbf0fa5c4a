// SPDX-License-Identifier: GPL-3.0-or-later
#include "paint_audit.h"

#include <QFont>
#include <QPaintEngine>
#include <QPixmap>
#include <QTextItem>

#include <algorithm>
#include <climits>
#include <cmath>

namespace attnscope::test {

namespace {

/// The colour a brush paints with: its own, or the middle of a gradient (the buttons of the
/// Fusion style); none for NoBrush and textures, which the audit treats as not painting.
QColor brushColour(const QBrush& brush) {
  if (brush.style() == Qt::NoBrush) return {};
  if (const QGradient* g = brush.gradient()) {
    const QGradientStops stops = g->stops();
    if (stops.isEmpty()) return {};
    QColor a = stops.front().second, b = stops.back().second;
    return QColor::fromRgbF((a.redF() + b.redF()) / 2, (a.greenF() + b.greenF()) / 2,
                            (a.blueF() + b.blueF()) / 2, (a.alphaF() + b.alphaF()) / 2);
  }
  if (brush.style() == Qt::SolidPattern) return brush.color();
  return {};  // hatches and textures: too sparse to be a background
}

/// Records instead of drawing. Coordinates are mapped to the device with the painter's whole
/// matrix (QPaintEngineState::transform includes the redirection of QWidget::render), and the
/// clip with the matrix in force when it was set, as QPainter hands it over.
class AuditEngine final : public QPaintEngine {
 public:
  explicit AuditEngine(PaintAudit* device)
      : QPaintEngine(QPaintEngine::AllFeatures), m_device(device) {}

  bool begin(QPaintDevice*) override {
    m_transform = QTransform();
    m_hasClip = false;
    m_clip = QPainterPath();
    m_pen = QPen();
    m_brush = QBrush();
    return true;
  }
  bool end() override { return true; }
  Type type() const override { return QPaintEngine::User; }

  void updateState(const QPaintEngineState& s) override {
    const DirtyFlags f = s.state();
    if (f & DirtyTransform) m_transform = s.transform();
    if (f & DirtyPen) m_pen = s.pen();
    if (f & DirtyBrush) m_brush = s.brush();
    if (f & DirtyClipEnabled) m_clipEnabled = s.isClipEnabled();
    if (f & (DirtyClipRegion | DirtyClipPath)) {
      QPainterPath path;
      if (f & DirtyClipPath)
        path = s.clipPath();
      else
        path.addRegion(s.clipRegion());
      path = m_transform.map(path);
      switch (s.clipOperation()) {
        case Qt::NoClip:
          m_hasClip = false;
          m_clip = QPainterPath();
          break;
        case Qt::ReplaceClip:
          m_hasClip = true;
          m_clip = path;
          break;
        case Qt::IntersectClip:
          m_clip = m_hasClip ? m_clip.intersected(path) : path;
          m_hasClip = true;
          break;
      }
    }
  }

  void drawRects(const QRectF* rects, int count) override {
    for (int i = 0; i < count; ++i) {
      QPainterPath p;
      p.addRect(rects[i]);
      fill(p);
    }
  }
  void drawPath(const QPainterPath& path) override { fill(path); }
  void drawPolygon(const QPointF* points, int count, PolygonDrawMode mode) override {
    if (mode == PolylineMode || count < 3) return;
    QPolygonF polygon;
    for (int i = 0; i < count; ++i) polygon << points[i];
    QPainterPath path;
    path.addPolygon(polygon);
    path.closeSubpath();
    fill(path);
  }
  void drawPixmap(const QRectF& r, const QPixmap& pm, const QRectF& sr) override {
    image(r, pm.toImage(), sr);
  }
  void drawImage(const QRectF& r, const QImage& img, const QRectF& sr,
                 Qt::ImageConversionFlags) override {
    image(r, img, sr);
  }

  void drawTextItem(const QPointF& p, const QTextItem& ti) override {
    const QString text = ti.text();
    if (text.trimmed().isEmpty()) return;
    PaintAudit::Item item;
    item.kind = PaintAudit::Item::Kind::Text;
    const QRectF local(p.x(), p.y() - ti.ascent(), ti.width(), ti.ascent() + ti.descent());
    item.rect = m_transform.mapRect(local);
    item.shape.addRect(item.rect);
    item.colour = m_pen.color();
    item.text = text;
    const QFont font = ti.font();
    const qreal nominal = font.pixelSize() > 0 ? font.pixelSize() : font.pointSizeF() * 96.0 / 72.0;
    item.pixelSize = nominal * std::sqrt(std::abs(m_transform.determinant()));
    item.bold = font.weight() >= QFont::DemiBold;
    const QRectF page(QPointF(0, 0), QSizeF(m_device->size()));
    item.clip = (m_hasClip && m_clipEnabled) ? m_clip.boundingRect().intersected(page) : page;
    // QWidget::render clips each child widget (a table's viewport, a scrolled canvas) through the
    // engine's system clip, in device pixels.
    if (!systemClip().isEmpty()) item.clip = item.clip.intersected(systemClip().boundingRect());
    m_device->record(std::move(item));
  }

 private:
  void fill(const QPainterPath& path) {
    const QColor c = brushColour(m_brush);
    if (!c.isValid() || c.alpha() == 0) return;
    PaintAudit::Item item;
    item.kind = PaintAudit::Item::Kind::Fill;
    item.shape = m_transform.map(path);
    if (m_hasClip && m_clipEnabled) item.shape = item.shape.intersected(m_clip);
    if (!systemClip().isEmpty()) {
      QPainterPath system;
      system.addRegion(systemClip());
      item.shape = item.shape.intersected(system);
    }
    if (item.shape.isEmpty()) return;
    item.rect = item.shape.boundingRect();
    item.colour = c;
    m_device->record(std::move(item));
  }
  void image(const QRectF& r, const QImage& img, const QRectF& sr) {
    PaintAudit::Item item;
    item.kind = PaintAudit::Item::Kind::Image;
    item.imageRect = m_transform.mapRect(r);
    // What shows of it: within the painter's clip and the widget's (system) clip.
    item.rect = item.imageRect;
    if (m_hasClip && m_clipEnabled) item.rect = item.rect.intersected(m_clip.boundingRect());
    if (!systemClip().isEmpty()) item.rect = item.rect.intersected(systemClip().boundingRect());
    if (item.rect.isEmpty()) return;
    item.shape.addRect(item.rect);
    item.image = img.copy(sr.toAlignedRect()).convertToFormat(QImage::Format_ARGB32);
    m_device->record(std::move(item));
  }

  PaintAudit* m_device;
  QTransform m_transform;
  QPen m_pen;
  QBrush m_brush;
  bool m_hasClip = false;
  bool m_clipEnabled = true;
  QPainterPath m_clip;
};

double luminance(const QColor& c) {
  const auto channel = [](double v) {
    return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
}

QColor over(const QColor& top, const QColor& below) {
  const double a = top.alphaF();
  return QColor::fromRgbF(top.redF() * a + below.redF() * (1 - a),
                          top.greenF() * a + below.greenF() * (1 - a),
                          top.blueF() * a + below.blueF() * (1 - a));
}

QString describe(const PaintAudit::Item& t) {
  return QStringLiteral("'%1' at %2,%3 %4x%5")
      .arg(t.text.left(40))
      .arg(t.rect.x(), 0, 'f', 0)
      .arg(t.rect.y(), 0, 'f', 0)
      .arg(t.rect.width(), 0, 'f', 0)
      .arg(t.rect.height(), 0, 'f', 0);
}

}  // namespace

PaintAudit::PaintAudit(QSize size) : m_size(size), m_engine(new AuditEngine(this)) {}
PaintAudit::~PaintAudit() = default;

QPaintEngine* PaintAudit::paintEngine() const { return m_engine.get(); }

int PaintAudit::metric(PaintDeviceMetric metric) const {
  switch (metric) {
    case PdmWidth:
      return m_size.width();
    case PdmHeight:
      return m_size.height();
    case PdmWidthMM:
      return qRound(m_size.width() * 25.4 / 96);
    case PdmHeightMM:
      return qRound(m_size.height() * 25.4 / 96);
    case PdmNumColors:
      return INT_MAX;
    case PdmDepth:
      return 32;
    case PdmDpiX:
    case PdmDpiY:
    case PdmPhysicalDpiX:
    case PdmPhysicalDpiY:
      return 96;  // the offscreen and Xvfb screens' logical DPI: text measures as on screen
    case PdmDevicePixelRatio:
      return 1;
    case PdmDevicePixelRatioScaled:
      return static_cast<int>(devicePixelRatioFScale());
    default:
      return 0;
  }
}

QColor PaintAudit::colourAt(QPointF p, std::size_t before, QColor page) const {
  for (std::size_t i = std::min(before, m_items.size()); i-- > 0;) {
    const Item& it = m_items[i];
    if (it.kind == Item::Kind::Text || !it.rect.contains(p)) continue;
    QColor c;
    if (it.kind == Item::Kind::Image) {
      if (it.image.isNull()) continue;
      const QRectF& r = it.imageRect;
      const int x = std::clamp(static_cast<int>((p.x() - r.left()) / r.width() * it.image.width()),
                               0, it.image.width() - 1);
      const int y = std::clamp(static_cast<int>((p.y() - r.top()) / r.height() * it.image.height()),
                               0, it.image.height() - 1);
      c = QColor::fromRgba(it.image.pixel(x, y));
    } else {
      if (it.shape.elementCount() > 5 && !it.shape.contains(p)) continue;  // not a rectangle
      c = it.colour;
    }
    if (c.alpha() == 0) continue;
    return c.alpha() == 255 ? c : over(c, colourAt(p, i, page));
  }
  return page;
}

double PaintAudit::contrast(const QColor& a, const QColor& b) {
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QStringList PaintAudit::problems(QColor page, const QList<QRectF>& scrolling,
                                 const QList<QColor>& inactive) const {
  // Cut only where a viewport's edge cuts it: every side on which the text leaves its clip is a
  // side of a viewport holding that clip (a table's header section, half scrolled in).
  const auto scrolledIn = [&scrolling](const QRectF& text, const QRectF& clip) {
    for (const QRectF& v : scrolling) {
      if (!v.adjusted(-1.5, -1.5, 1.5, 1.5).contains(clip)) continue;
      const auto near = [](qreal a, qreal b) { return std::abs(a - b) <= 1.5; };
      if ((text.left() >= clip.left() - 1 || near(clip.left(), v.left())) &&
          (text.top() >= clip.top() - 1 || near(clip.top(), v.top())) &&
          (text.right() <= clip.right() + 1 || near(clip.right(), v.right())) &&
          (text.bottom() <= clip.bottom() + 1 || near(clip.bottom(), v.bottom())))
        return true;
    }
    return false;
  };
  QStringList out;
  std::vector<std::size_t> texts;
  for (std::size_t i = 0; i < m_items.size(); ++i)
    if (m_items[i].kind == Item::Kind::Text) texts.push_back(i);
  for (std::size_t n = 0; n < texts.size(); ++n) {
    const Item& t = m_items[texts[n]];
    if (!t.clip.intersects(t.rect)) continue;  // scrolled out of sight, not cut
    if (!t.clip.adjusted(-1, -1, 1, 1).contains(t.rect) && !scrolledIn(t.rect, t.clip))
      out << QStringLiteral("cut: %1 by a clip of %2,%3 %4x%5")
                 .arg(describe(t))
                 .arg(t.clip.x(), 0, 'f', 0)
                 .arg(t.clip.y(), 0, 'f', 0)
                 .arg(t.clip.width(), 0, 'f', 0)
                 .arg(t.clip.height(), 0, 'f', 0);
    if (t.pixelSize < 7.5)
      out << QStringLiteral("tiny: %1 at %2 px").arg(describe(t)).arg(t.pixelSize, 0, 'f', 1);
    const QColor under = colourAt(t.rect.center(), texts[n], page);
    const QColor ink = t.colour.alpha() == 255 ? t.colour : over(t.colour, under);
    const bool large = t.pixelSize >= 24 || (t.bold && t.pixelSize >= 18.66);
    const double ratio = contrast(ink, under);
    if (ratio < (large ? 3.0 : 4.5) && !inactive.contains(t.colour))
      out << QStringLiteral("contrast %1: %2 %3 on %4")
                 .arg(ratio, 0, 'f', 2)
                 .arg(describe(t), ink.name(), under.name());
    // A later opaque fill or image over a fifth of the text hides it (a label's backing laid on
    // another label).
    const QRectF shown = t.rect.intersected(t.clip);
    for (std::size_t k = texts[n] + 1; k < m_items.size(); ++k) {
      const Item& o = m_items[k];
      if (o.kind == Item::Kind::Text || (o.kind == Item::Kind::Fill && o.colour.alpha() < 255))
        continue;
      const QRectF hidden = shown.intersected(o.rect);
      if (hidden.width() * hidden.height() > 0.2 * shown.width() * shown.height() &&
          (o.kind == Item::Kind::Image || o.shape.elementCount() <= 5 ||
           o.shape.contains(hidden.center()))) {
        out << QStringLiteral("covered: %1 by a later %2 at %3,%4 %5x%6")
                   .arg(describe(t), o.kind == Item::Kind::Image ? QStringLiteral("image")
                                                                 : QStringLiteral("fill"))
                   .arg(o.rect.x(), 0, 'f', 0)
                   .arg(o.rect.y(), 0, 'f', 0)
                   .arg(o.rect.width(), 0, 'f', 0)
                   .arg(o.rect.height(), 0, 'f', 0);
        break;
      }
    }
    for (std::size_t m = n + 1; m < texts.size(); ++m) {
      const Item& u = m_items[texts[m]];
      // What shows of each: a label half scrolled under a status bar does not sit on it.
      const QRectF both = t.rect.intersected(t.clip).intersected(u.rect.intersected(u.clip));
      if (both.isEmpty()) continue;
      const bool sameLabel = t.text == u.text && std::abs(t.rect.x() - u.rect.x()) <= 2 &&
                             std::abs(t.rect.y() - u.rect.y()) <= 2;
      const double smaller =
          std::min(t.rect.width() * t.rect.height(), u.rect.width() * u.rect.height());
      if (!sameLabel && both.width() * both.height() > 0.3 * smaller)
        out << QStringLiteral("overlap: %1 and %2").arg(describe(t), describe(u));
    }
  }
  return out;
}

bool PaintAudit::showsSomething(QColor page) const {
  int texts = 0;
  for (const Item& it : m_items) {
    if (it.kind == Item::Kind::Text) ++texts;
    if (it.kind == Item::Kind::Image && !it.image.isNull()) return true;
    if (it.kind == Item::Kind::Fill && it.colour.rgb() != page.rgb() && it.rect.width() > 2 &&
        it.rect.height() > 2)
      return true;
  }
  return texts >= 2;
}

}  // namespace attnscope::test
