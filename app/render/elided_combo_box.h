// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QComboBox>

namespace attnscope::render {

/// A combo box whose current text is elided to its width ("0: the cat sat on…") instead of cut
/// off mid-letter, with the whole text as its tooltip. For items as long as the user's sentences,
/// where a box as wide as its longest item would push the window past a small screen.
class ElidedComboBox final : public QComboBox {
  Q_OBJECT
 public:
  explicit ElidedComboBox(QWidget* parent = nullptr);
  /// The text as drawn in the box's field.
  QString shownText() const;

 protected:
  void paintEvent(QPaintEvent* event) override;
};

}  // namespace attnscope::render
