// SPDX-License-Identifier: GPL-3.0-or-later
#include "palette.h"

#include <algorithm>
#include <cmath>

namespace attnscope::render {
namespace {

QMap<double, QColor> stopsOf(std::initializer_list<const char*> hex) {
  QMap<double, QColor> stops;
  const int n = static_cast<int>(hex.size());
  int i = 0;
  for (const char* h : hex) stops.insert(double(i++) / (n - 1), QColor(QLatin1String(h)));
  return stops;
}

}  // namespace

Palette::Palette(QString name, QMap<double, QColor> stops, QColor masked)
    : m_name(std::move(name)), m_stops(std::move(stops)), m_masked(masked) {}

QStringList Palette::names() {
  return {QStringLiteral("viridis"), QStringLiteral("magma"), QStringLiteral("cividis"),
          QStringLiteral("greyscale")};
}

Palette Palette::named(const QString& name) {
  const QString n = name.toLower();
  // Nine samples of each matplotlib map at 0, 1/8, …, 1.
  if (n == QLatin1String("magma")) {
    return Palette(n,
                   stopsOf({"#000004", "#1c1044", "#4f127b", "#812581", "#b5367a", "#e55064",
                            "#fb8761", "#fec287", "#fcfdbf"}),
                   QColor(QStringLiteral("#9ecae1")));
  }
  if (n == QLatin1String("cividis")) {
    return Palette(n,
                   stopsOf({"#00224e", "#123570", "#3b496c", "#575d6d", "#707173", "#8a8678",
                            "#a59c74", "#c3b369", "#fee838"}),
                   QColor(QStringLiteral("#e7b7c8")));
  }
  if (n == QLatin1String("greyscale") || n == QLatin1String("grayscale")) {
    // White for zero, so mostly-empty attention prints as paper.
    return Palette(QStringLiteral("greyscale"), stopsOf({"#ffffff", "#000000"}),
                   QColor(QStringLiteral("#f4c7c3")));
  }
  return Palette(QStringLiteral("viridis"),
                 stopsOf({"#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80",
                          "#5ec962", "#addc30", "#fde725"}),
                 QColor(QStringLiteral("#d9d9d9")));
}

Palette Palette::diverging() {
  return Palette(QStringLiteral("diverging"),
                 stopsOf({"#2166ac", "#67a9cf", "#f7f7f7", "#ef8a62", "#b2182b"}),
                 QColor(QStringLiteral("#d9d9d9")));
}

QColor Palette::categorical(int index) {
  static const char* const kTab20[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                       "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
                                       "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
                                       "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"};
  if (index >= 0 && index < 20) return QColor(QLatin1String(kTab20[index]));
  // Golden-angle steps keep neighbouring heads apart however many there are.
  return QColor::fromHsvF(std::fmod(std::max(index, 0) * 0.381966, 1.0), 0.65, 0.8);
}

QColor Palette::colorAt(double t) const {
  if (!std::isfinite(t)) return m_masked;
  t = std::clamp(t, 0.0, 1.0);
  auto upper = m_stops.lowerBound(t);
  if (upper == m_stops.begin()) return upper.value();
  if (upper == m_stops.end()) return std::prev(upper).value();
  auto lower = std::prev(upper);
  const double f = (t - lower.key()) / (upper.key() - lower.key());
  const QColor a = lower.value(), b = upper.value();
  const auto mix = [f](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * f)); };
  return QColor(mix(a.red(), b.red()), mix(a.green(), b.green()), mix(a.blue(), b.blue()));
}

QVector<unsigned int> Palette::lookupTable(int n) const {
  QVector<unsigned int> lut(n);
  for (int i = 0; i < n; ++i) lut[i] = colorAt(n > 1 ? double(i) / (n - 1) : 0.0).rgb();
  return lut;
}

namespace {

// WCAG 2 relative luminance of an sRGB colour.
double relativeLuminance(const QColor& c) {
  const auto linear = [](double v) {
    return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF());
}

}  // namespace

double Palette::contrastRatio(const QColor& a, const QColor& b) {
  const double la = relativeLuminance(a), lb = relativeLuminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QColor Palette::inkOn(const QColor& fill) {
  // Pure black and white: a near-black (20, 20, 20) would fall to 4.2 on mid-luminance fills.
  const QColor black(Qt::black), white(Qt::white);
  return contrastRatio(black, fill) >= contrastRatio(white, fill) ? black : white;
}

QColor Palette::readableOn(const QColor& ink, const QColor& fill, const QColor& text) {
  const QColor target = contrastRatio(text, fill) >= 4.5 ? text : inkOn(fill);
  for (int step = 0; step <= 20; ++step) {
    const double t = step / 20.0;
    const QColor mixed = QColor::fromRgbF(ink.redF() * (1 - t) + target.redF() * t,
                                          ink.greenF() * (1 - t) + target.greenF() * t,
                                          ink.blueF() * (1 - t) + target.blueF() * t);
    if (contrastRatio(mixed, fill) >= 4.5) return mixed;
  }
  return target;
}

QColor Palette::over(const QColor& top, const QColor& below) {
  const double a = top.alphaF();
  return QColor::fromRgbF(top.redF() * a + below.redF() * (1 - a),
                          top.greenF() * a + below.greenF() * (1 - a),
                          top.blueF() * a + below.blueF() * (1 - a));
}

}  // namespace attnscope::render
