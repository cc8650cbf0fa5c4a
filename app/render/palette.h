// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QColor>
#include <QMap>
#include <QString>
#include <QStringList>
#include <QVector>

namespace attnscope::render {

/// A colour map given as colour stops on [0, 1], interpolated linearly in RGB. The sequential maps
/// are sampled from matplotlib's (QCustomPlot 2.1 has no viridis); the same stops feed
/// QCPColorGradient on screen and the QImage lookup tables of the painter-drawn views, so every
/// view colours a value alike.
class Palette final {
 public:
  /// viridis | magma | cividis | greyscale; unknown names fall back to viridis.
  static Palette named(const QString& name);
  static QStringList names();
  /// Blue – white – red for signed differences, 0.5 (white) meaning 0.
  static Palette diverging();
  /// The colour of head `index` where several heads are drawn together (the lines view): the ten
  /// of matplotlib's tab10, then their lighter tab20 partners, then hues around the circle.
  static QColor categorical(int index);

  /// WCAG 2 contrast ratio of two colours, from 1 (same luminance) to 21 (black on white).
  static double contrastRatio(const QColor& a, const QColor& b);
  /// Black or white, whichever contrasts more with `fill`: text drawn on a colour of any map
  /// keeps a ratio of at least 4.58 (WCAG AA asks for 4.5).
  static QColor inkOn(const QColor& fill);
  /// `ink` itself when it keeps a WCAG AA ratio (4.5) on `fill`, else `ink` mixed towards `text`
  /// (the theme's text colour, or black or white) just enough to: a muted label or an accent
  /// keeps its hue where it can and stays readable on every theme's background.
  static QColor readableOn(const QColor& ink, const QColor& fill, const QColor& text);
  /// `top` drawn over `below` with its alpha: what a translucent fill looks like.
  static QColor over(const QColor& top, const QColor& below);

  const QString& name() const { return m_name; }
  const QMap<double, QColor>& stops() const { return m_stops; }
  /// The colour at t in [0, 1] (clamped).
  QColor colorAt(double t) const;
  /// n colours sampled evenly from 0 to 1, for fast colouring of images.
  QVector<unsigned int> lookupTable(int n = 256) const;
  /// Distinct colour for masked (-inf) scores, unlike any colour of the map.
  QColor maskedColor() const { return m_masked; }

 private:
  Palette(QString name, QMap<double, QColor> stops, QColor masked);
  QString m_name;
  QMap<double, QColor> m_stops;
  QColor m_masked;
};

}  // namespace attnscope::render
