// SPDX-License-Identifier: GPL-3.0-or-later
#include "plot_painter.h"

#include <QPicture>

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

void PlotPainter::draw(QPainter& painter, QCustomPlot& plot, const QRectF& rect) {
  QPicture picture;
  {
    QCPPainter recorder(&picture);
    plot.toPainter(&recorder, static_cast<int>(rect.width()), static_cast<int>(rect.height()));
  }
  painter.drawPicture(rect.topLeft(), picture);
}

}  // namespace attnscope::render
