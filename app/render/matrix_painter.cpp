// SPDX-License-Identifier: GPL-3.0-or-later
#include "matrix_painter.h"

#include <QFontMetricsF>
#include <QHash>
#include <QPaintDevice>
#include <QPainter>

#include <algorithm>
#include <cmath>

#include "head_matrix.h"

namespace attnscope::render {

QImage MatrixPainter::colorize(const float* values, int rows, int cols, const Palette& palette,
                               double lo, double hi) {
  QImage image(std::max(cols, 1), std::max(rows, 1), QImage::Format_RGB32);
  image.fill(palette.colorAt(0));
  if (rows <= 0 || cols <= 0) return image;
  const QVector<unsigned int> lut = palette.lookupTable(256);
  const unsigned int masked = palette.maskedColor().rgb();
  const double scale = hi > lo ? 255.0 / (hi - lo) : 0.0;
  for (int r = 0; r < rows; ++r) {
    auto* line = reinterpret_cast<unsigned int*>(image.scanLine(r));
    const float* row = values + static_cast<std::size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) {
      const float v = row[c];
      if (!std::isfinite(v)) {
        line[c] = masked;
        continue;
      }
      const double i = std::clamp((v - lo) * scale, 0.0, 255.0);
      line[c] = lut[static_cast<int>(std::lround(i))];
    }
  }
  return image;
}

QImage MatrixPainter::colorize(const HeadMatrix& m, const Palette& palette, double lo, double hi) {
  return colorize(m.values.data(), m.rows, m.cols, palette, lo, hi);
}

bool MatrixPainter::isVectorDevice(const QPainter& painter) {
  const QPaintDevice* device = painter.device();
  return device && device->devType() != QInternal::Image &&
         device->devType() != QInternal::Pixmap && device->devType() != QInternal::Widget;
}

void MatrixPainter::drawCells(QPainter& painter, const QRectF& target, const QImage& cells,
                              int rectangleLimit) {
  const bool vector = isVectorDevice(painter);
  painter.save();
  painter.setRenderHint(QPainter::SmoothPixmapTransform, false);
  const int cols = cells.width(), rows = cells.height();
  if (vector && cols > 0 && rows > 0 && cols * rows <= std::min(rectangleLimit, kMaxVectorCells)) {
    // One brush per colour (at most the palette's 256 levels and the masked colour), so an SVG
    // has one <g> per colour rather than per cell.
    const QImage rgb = cells.convertToFormat(QImage::Format_RGB32);
    const double w = target.width() / cols, h = target.height() / rows;
    // A sliver of overlap hides the hairline seams viewers draw between abutting antialiased
    // rectangles; it is far below a cell.
    const double overlap = std::min(0.02 * std::min(w, h), 0.25);
    QHash<QRgb, QVector<QRectF>> byColour;
    for (int r = 0; r < rows; ++r) {
      const auto* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(r));
      for (int c = 0; c < cols;) {
        int end = c + 1;
        while (end < cols && line[end] == line[c]) ++end;
        const double right = end == cols ? target.right() : target.left() + end * w + overlap;
        const double bottom =
            r + 1 == rows ? target.bottom() : target.top() + (r + 1) * h + overlap;
        byColour[line[c]].append(
            QRectF(QPointF(target.left() + c * w, target.top() + r * h), QPointF(right, bottom)));
        c = end;
      }
    }
    painter.setPen(Qt::NoPen);
    painter.setRenderHint(QPainter::Antialiasing, false);
    for (auto it = byColour.cbegin(); it != byColour.cend(); ++it) {
      painter.setBrush(QColor(it.key()));
      painter.drawRects(it.value());
    }
  } else if (vector && cols > 0 && rows > 0) {
    // At least ~8 device pixels per cell, at most 2048 pixels a side.
    const int fx = std::clamp(static_cast<int>(std::ceil(target.width() * 2 / cols)), 1,
                              std::max(1, 2048 / cols));
    const int fy = std::clamp(static_cast<int>(std::ceil(target.height() * 2 / rows)), 1,
                              std::max(1, 2048 / rows));
    // Lossless: QPdfWriter otherwise stores colour images as JPEG (wrong colours at cell edges).
    painter.setRenderHint(QPainter::LosslessImageRendering, true);
    painter.drawImage(
        target, cells.scaled(cols * fx, rows * fy, Qt::IgnoreAspectRatio, Qt::FastTransformation));
  } else {
    painter.drawImage(target, cells);
  }
  painter.restore();
}

double MatrixPainter::labelWidth(const QStringList& labels, const QFont& font, int step) {
  const QFontMetricsF fm(font);
  double w = 0;
  for (qsizetype i = 0; i < labels.size(); i += std::max(1, step))
    w = std::max(w, fm.horizontalAdvance(labels[i]));
  return w;
}

namespace {

// Every n-th label so that labels `extent` pixels tall never overlap on cells `cell` pixels apart.
int thinning(double cell, double extent) {
  if (cell <= 0) return 1;
  return std::max(1, static_cast<int>(std::ceil(extent / cell)));
}

}  // namespace

void MatrixPainter::drawRowLabels(QPainter& painter, const QRectF& cells, const QStringList& labels,
                                  const QFont& font, const QColor& color) {
  if (labels.isEmpty()) return;
  const QFontMetricsF fm(font);
  const double cell = cells.height() / labels.size();
  const int step = thinning(cell, fm.height() * 1.05);
  painter.save();
  painter.setFont(font);
  painter.setPen(color);
  for (int i = 0; i < labels.size(); i += step) {
    const QRectF r(cells.left() - 4 - 400, cells.top() + (i + 0.5) * cell - fm.height() / 2, 400,
                   fm.height());
    painter.drawText(r, Qt::AlignRight | Qt::AlignVCenter, labels[i]);
  }
  painter.restore();
}

double MatrixPainter::columnLabelHeight(const QStringList& labels, double cellWidth,
                                        const QFont& font) {
  const QFontMetricsF fm(font);
  const double widest = labelWidth(labels, font);
  const bool rotate = widest + 4 > cellWidth;
  return (rotate ? widest : fm.height()) + 6;
}

double MatrixPainter::drawColumnLabels(QPainter& painter, const QRectF& cells,
                                       const QStringList& labels, const QFont& font,
                                       const QColor& color) {
  if (labels.isEmpty()) return 0;
  const QFontMetricsF fm(font);
  const double cell = cells.width() / labels.size();
  const double widest = labelWidth(labels, font);
  const bool rotate = widest + 4 > cell;
  const int step = rotate ? thinning(cell, fm.height() * 1.05) : 1;
  painter.save();
  painter.setFont(font);
  painter.setPen(color);
  for (int i = 0; i < labels.size(); i += step) {
    const double x = cells.left() + (i + 0.5) * cell;
    if (rotate) {
      painter.save();
      painter.translate(x, cells.bottom() + 4);
      painter.rotate(-90);
      // After rotating, +x points up the page; text ends at the axis.
      painter.drawText(QRectF(-widest - 2, -fm.height() / 2, widest, fm.height()),
                       Qt::AlignRight | Qt::AlignVCenter, labels[i]);
      painter.restore();
    } else {
      painter.drawText(QRectF(x - cell / 2, cells.bottom() + 3, cell, fm.height()),
                       Qt::AlignHCenter | Qt::AlignTop, labels[i]);
    }
  }
  painter.restore();
  return (rotate ? widest : fm.height()) + 6;
}

QVector<double> MatrixPainter::niceTicks(double lo, double hi, int count) {
  QVector<double> ticks;
  if (!(hi > lo) || count < 1) {
    ticks << lo;
    return ticks;
  }
  const double raw = (hi - lo) / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step)
    ticks << (std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

QString MatrixPainter::formatValue(double v, int decimals) {
  if (!std::isfinite(v)) return v < 0 ? QStringLiteral("−∞ (masked)") : QStringLiteral("NaN");
  QString s = QString::number(v, 'f', decimals);
  if (s.startsWith(QLatin1Char('-'))) s.replace(0, 1, QChar(0x2212));
  return s;
}

double MatrixPainter::colorBarWidth(const RenderStyle& style, double barWidth) {
  const QFontMetricsF fm(style.font(11));
  return barWidth + 6 + fm.horizontalAdvance(QStringLiteral("−00.00")) + 4 + fm.height() + 4;
}

void MatrixPainter::drawColorBar(QPainter& painter, const QRectF& bar, const Palette& palette,
                                 double lo, double hi, const RenderStyle& style,
                                 const QString& caption, bool masked) {
  painter.save();
  QRectF gradientRect = bar;
  const QFont font = style.font(11);
  const QFontMetricsF fm(font);
  if (masked) gradientRect.setBottom(bar.bottom() - fm.height() * 2);
  QImage strip(1, 256, QImage::Format_RGB32);
  const QVector<unsigned int> lut = palette.lookupTable(256);
  for (int i = 0; i < 256; ++i) strip.setPixel(0, 255 - i, lut[i]);
  drawCells(painter, gradientRect, strip);
  painter.setPen(QPen(style.frame, 0));
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(gradientRect);
  painter.setFont(font);
  const int count = std::max(2, static_cast<int>(gradientRect.height() / (fm.height() * 2.5)));
  const QVector<double> ticks = niceTicks(lo, hi, count);
  int decimals = 0;
  if (ticks.size() > 1) {
    const double step = ticks[1] - ticks[0];
    // The fewest decimals that write the step exactly (0.25 → 2, 0.1 → 1, 5 → 0).
    while (decimals < 4 && std::abs(step * std::pow(10.0, decimals) -
                                    std::round(step * std::pow(10.0, decimals))) > 1e-6)
      ++decimals;
  }
  for (double t : ticks) {
    if (hi <= lo) break;
    const double y = gradientRect.bottom() - (t - lo) / (hi - lo) * gradientRect.height();
    painter.setPen(QPen(style.text, 0));
    painter.drawLine(QPointF(gradientRect.right(), y), QPointF(gradientRect.right() + 4, y));
    painter.drawText(QRectF(gradientRect.right() + 6, y - fm.height() / 2, 200, fm.height()),
                     Qt::AlignLeft | Qt::AlignVCenter, formatValue(t, decimals));
  }
  if (masked) {
    const QRectF swatch(bar.left(), bar.bottom() - fm.height() * 1.2, bar.width(),
                        fm.height() * 1.2);
    painter.fillRect(swatch, palette.maskedColor());
    painter.setPen(QPen(style.frame, 0));
    painter.drawRect(swatch);
    painter.setPen(style.text);
    painter.drawText(QRectF(swatch.right() + 6, swatch.top(), 200, swatch.height()),
                     Qt::AlignLeft | Qt::AlignVCenter, QStringLiteral("masked"));
  }
  if (!caption.isEmpty()) {
    // Caption runs up the far side of the tick labels.
    const double x = gradientRect.right() + 6 + fm.horizontalAdvance(QStringLiteral("−00.00")) + 4;
    painter.translate(x + fm.height(), gradientRect.center().y());
    painter.rotate(-90);
    painter.setPen(style.muted);
    // A caption longer than the bar (several notes: log scale, hidden sink, on demand) gets a
    // smaller font, down to 8 pixels, and is then cut with an ellipsis rather than run past the
    // bar's ends.
    QFont captionFont = font;
    double pixels = 11;
    while (pixels > 8 &&
           QFontMetricsF(captionFont).horizontalAdvance(caption) > gradientRect.height()) {
      pixels -= 0.5;
      captionFont = style.font(pixels);
    }
    painter.setFont(captionFont);
    const QString shown =
        QFontMetricsF(captionFont).elidedText(caption, Qt::ElideRight, gradientRect.height());
    painter.drawText(
        QRectF(-gradientRect.height() / 2, -fm.height(), gradientRect.height(), fm.height()),
        Qt::AlignCenter, shown);
  }
  painter.restore();
}

}  // namespace attnscope::render
