// SPDX-License-Identifier: GPL-3.0-or-later
#include "elided_combo_box.h"

#include <QStyleOptionComboBox>
#include <QStylePainter>

namespace attnscope::render {

ElidedComboBox::ElidedComboBox(QWidget* parent) : QComboBox(parent) {
  connect(this, &QComboBox::currentTextChanged, this,
          [this](const QString& text) { setToolTip(text); });
}

QString ElidedComboBox::shownText() const {
  QStyleOptionComboBox opt;
  initStyleOption(&opt);
  QRect field =
      style()->subControlRect(QStyle::CC_ComboBox, &opt, QStyle::SC_ComboBoxEditField, this);
  if (!opt.currentIcon.isNull()) field.setLeft(field.left() + opt.iconSize.width() + 4);
  // The style draws the label a few pixels inside the field (Fusion: 4 on the left).
  return fontMetrics().elidedText(opt.currentText, Qt::ElideRight, field.width() - 6);
}

void ElidedComboBox::paintEvent(QPaintEvent*) {
  QStylePainter painter(this);
  QStyleOptionComboBox opt;
  initStyleOption(&opt);
  painter.drawComplexControl(QStyle::CC_ComboBox, opt);
  opt.currentText = shownText();
  painter.drawControl(QStyle::CE_ComboBoxLabel, opt);
}

}  // namespace attnscope::render
