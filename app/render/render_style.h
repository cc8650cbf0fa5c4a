// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QColor>
#include <QFont>
#include <QRect>

#include "view_state.h"

class QPainter;
class QWidget;

namespace attnscope::render {

/// Colours and fonts of one rendering. Widgets follow the window's palette (its theme, light or
/// dark); exports are dark text on white, so slides and papers look the same everywhere, unless
/// the export asks for the window's colours (ExportOptions::themed).
/// Fonts are sized in pixels, so a drawing looks alike on screen, in PNG, SVG and PDF.
struct RenderStyle {
  QColor background = Qt::white;
  QColor text = QColor(0x20, 0x20, 0x20);
  QColor muted = QColor(0x60, 0x60, 0x60);
  QColor frame = QColor(0xb0, 0xb0, 0xb0);
  QColor accent = QColor(0xd6, 0x27, 0x28);  // selection and pinned rows
  double fontScale = 1.0;

  static RenderStyle forExport(const ViewState& state);
  static RenderStyle forWidget(const QWidget& widget, const ViewState& state);

  /// The UI font at `pixels` (before the classroom scale).
  QFont font(double pixels, bool bold = false) const;
  /// The height of the title strip drawTitle draws.
  int titleHeight() const;
  /// Draws a title strip at the top of rect (nothing for an empty title); returns what is left.
  QRect drawTitle(QPainter& painter, const QRect& rect, const QString& title) const;
  /// A muted sentence centred in rect: what a view shows when it has nothing to draw.
  void drawMessage(QPainter& painter, const QRectF& rect, const QString& message) const;
};

}  // namespace attnscope::render
