// SPDX-License-Identifier: GPL-3.0-or-later
#include "plot_painter.h"

#include <QImage>
#include <QPicture>

#include <algorithm>
#include <cmath>

#include "matrix_painter.h"
#include "qcustomplot_include.h"
#include "render_style.h"

namespace attnscope::render {

void PlotPainter::styleAxis(QCPAxis* axis, const RenderStyle& style, double tickPixels) {
  axis->setBasePen(QPen(style.frame, 1));
  axis->setTickPen(QPen(style.frame, 1));
  axis->setSubTicks(false);
  axis->setTickLabelColor(style.text);
  axis->setLabelColor(style.muted);
  axis->setTickLabelFont(style.font(tickPixels));
  axis->setLabelFont(style.font(tickPixels + 1));
  axis->grid()->setVisible(false);
}

void PlotPainter::draw(QPainter& painter, QCustomPlot& plot, const QRectF& rect, bool bigBitmaps) {
  if (bigBitmaps && !MatrixPainter::isVectorDevice(painter)) {
    // Pixels: the plot straight into an image of the device's resolution. Replaying a QPicture
    // would serialise every bitmap in it (a heatmap's cells) through PNG compression first.
    const QTransform& t = painter.deviceTransform();
    const double scale = std::max(1.0, std::hypot(t.m11(), t.m12()));
    QImage image((rect.size() * scale).toSize(), QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) return;
    image.setDevicePixelRatio(scale);
    image.fill(Qt::transparent);
    {
      QCPPainter p(&image);
      p.setRenderHints(painter.renderHints());
      plot.toPainter(&p, static_cast<int>(rect.width()), static_cast<int>(rect.height()));
    }
    painter.drawImage(rect.topLeft(), image);
    return;
  }
  QPicture picture;
  {
    QCPPainter recorder(&picture);
    plot.toPainter(&recorder, static_cast<int>(rect.width()), static_cast<int>(rect.height()));
  }
  painter.drawPicture(rect.topLeft(), picture);
}

}  // namespace attnscope::render
