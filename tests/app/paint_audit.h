// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QColor>
#include <QImage>
#include <QList>
#include <QPaintDevice>
#include <QPainterPath>
#include <QRectF>
#include <QString>
#include <QStringList>

#include <memory>
#include <vector>

class QPaintEngine;

namespace attnscope::test {

/// A paint device that draws nothing and records what was painted on it, so a test can check a
/// drawing for legibility as a property instead of by eye: every text item with the rectangle
/// it covers on the page, its colour and the clip it was drawn under, and every filled shape or
/// image beneath it. Draw a view into it (AttentionView::renderTo, or QWidget::render) and ask
/// problems(): text cut by its clip or the page (a label overflowing its box), text over other
/// text, text below WCAG AA contrast against what lies under its middle, and an empty drawing.
class PaintAudit : public QPaintDevice {
 public:
  /// One painted item, in device pixels, in painting order.
  struct Item {
    enum class Kind { Fill, Image, Text };
    Kind kind = Kind::Fill;
    QPainterPath shape;  // Fill: the filled area; Image/Text: their rectangle
    QRectF rect;         // the bounding rectangle of `shape`
    QColor colour;       // Fill: the brush; Text: the pen
    QImage image;        // Image: the pixels drawn into `imageRect`, of which `rect` shows
    QRectF imageRect;
    QString text;         // Text
    qreal pixelSize = 0;  // Text: the font's size in pixels
    bool bold = false;
    QRectF clip;  // Text: what of the page the clip let through
  };

  explicit PaintAudit(QSize size);
  ~PaintAudit() override;
  QPaintEngine* paintEngine() const override;

  const std::vector<Item>& items() const { return m_items; }
  void record(Item item) { m_items.push_back(std::move(item)); }
  QSize size() const { return m_size; }

  /// The colour under device point p just before item `before` was painted: the last fill or
  /// image covering p, blended when translucent, over `page`.
  QColor colourAt(QPointF p, std::size_t before, QColor page) const;

  /// Everything a reader would trip over, one line each ("cut: 'layer_norm' …"). `page` is the
  /// colour under everything painted. Text cut by one of `scrolling` (viewports, in device
  /// pixels) is half scrolled into sight, not overflowing; text in one of `inactive` (disabled
  /// controls' colours) has no contrast requirement, as WCAG says.
  QStringList problems(QColor page, const QList<QRectF>& scrolling = {},
                       const QList<QColor>& inactive = {}) const;
  /// True when the drawing shows something beyond its title: a fill or image other than the
  /// page's colour, or at least two text items.
  bool showsSomething(QColor page) const;

  /// WCAG 2 contrast ratio of two opaque colours (1 … 21).
  static double contrast(const QColor& a, const QColor& b);

 protected:
  int metric(PaintDeviceMetric metric) const override;

 private:
  QSize m_size;
  std::unique_ptr<QPaintEngine> m_engine;
  std::vector<Item> m_items;
};

}  // namespace attnscope::test
