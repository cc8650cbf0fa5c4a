// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QImage>
#include <QRectF>
#include <QStringList>
#include <QVector>

#include "palette.h"
#include "render_style.h"

class QPainter;

namespace attnscope::render {

struct HeadMatrix;

/// The drawing pieces every painter-drawn matrix shares (grid cells, compare panels, the head
/// similarity matrix): colouring into a QImage, nearest-neighbour drawing, token labels that thin
/// and rotate to fit, and the colour bar.
class MatrixPainter final {
 public:
  /// One pixel per cell; NaN cells get the palette's masked colour. Values map linearly from
  /// [lo, hi] onto the palette (clamped).
  static QImage colorize(const float* values, int rows, int cols, const Palette& palette, double lo,
                         double hi);
  static QImage colorize(const HeadMatrix& m, const Palette& palette, double lo, double hi);
  /// Matrices up to this many cells (256 × 256) are drawn as vector rectangles on vector devices
  /// (SVG, PDF, QPicture); larger ones as one lossless image, where rectangles would make files
  /// of tens of megabytes that viewers draw slowly.
  static constexpr int kMaxVectorCells = 256 * 256;
  /// Whether the painter draws into a vector device (SVG, PDF, a QPicture replayed into one).
  static bool isVectorDevice(const QPainter& painter);
  /// Draws the cells without smoothing. On vector devices, up to kMaxVectorCells, each cell is a
  /// filled rectangle (one <rect> in SVG, one re/f in PDF; runs of one colour along a row are
  /// merged); above that an upscaled copy of the image, drawn losslessly (no JPEG in PDF), since
  /// viewers smooth small images when they enlarge them.
  /// `rectangleLimit` lowers the cut-off, for drawings of many matrices (the grid) whose
  /// rectangles together would be too many.
  static void drawCells(QPainter& painter, const QRectF& target, const QImage& cells,
                        int rectangleLimit = kMaxVectorCells);
  /// Labels to the left of `cells` (one per row), right-aligned, thinned to every n-th when rows
  /// are shorter than the text.
  static void drawRowLabels(QPainter& painter, const QRectF& cells, const QStringList& labels,
                            const QFont& font, const QColor& color);
  /// Labels below `cells`, horizontal when they fit, else rotated to read upwards; thinned
  /// likewise. Returns the height used.
  static double drawColumnLabels(QPainter& painter, const QRectF& cells, const QStringList& labels,
                                 const QFont& font, const QColor& color);
  /// The height drawColumnLabels will need for these labels at this cell width.
  static double columnLabelHeight(const QStringList& labels, double cellWidth, const QFont& font);
  /// The widest label, in pixels; with `step` > 1 the widest of labels 0, step, 2·step, … (the
  /// ones an axis thinned to every step-th label draws).
  static double labelWidth(const QStringList& labels, const QFont& font, int step = 1);
  /// A vertical colour bar with ticks and a caption; `masked` adds a swatch of the masked colour.
  static void drawColorBar(QPainter& painter, const QRectF& bar, const Palette& palette, double lo,
                           double hi, const RenderStyle& style, const QString& caption,
                           bool masked = false);
  /// The width drawColorBar needs beside a bar of `barWidth`.
  static double colorBarWidth(const RenderStyle& style, double barWidth);
  /// Round tick values covering [lo, hi], about `count` of them.
  static QVector<double> niceTicks(double lo, double hi, int count);
  /// "0.123", "−2.5": the format of every value the views print.
  static QString formatValue(double v, int decimals = 3);
};

}  // namespace attnscope::render
