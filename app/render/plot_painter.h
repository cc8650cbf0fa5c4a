// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QRectF>

class QCPAxis;
class QCustomPlot;
class QPainter;

namespace attnscope::render {

struct RenderStyle;

/// What the QCustomPlot-based drawings (heatmap, stats bar chart) share: axis styling from a
/// RenderStyle, and drawing a plot into any QPainter. QCustomPlot paints only through its own
/// QCPPainter, so the plot is recorded into a QPicture and replayed, which keeps SVG and PDF
/// output vector.
class PlotPainter final {
 public:
  static void styleAxis(QCPAxis* axis, const RenderStyle& style, double tickPixels = 12);
  /// bigBitmaps: the plot holds large bitmaps (a heatmap of more than 256 × 256 cells); raster
  /// painters then get the plot drawn straight into an image, since replaying the QPicture would
  /// first serialise those bitmaps through PNG compression (0.6 s at T = 4096).
  static void draw(QPainter& painter, QCustomPlot& plot, const QRectF& rect,
                   bool bigBitmaps = false);
};

}  // namespace attnscope::render
