// SPDX-License-Identifier: GPL-3.0-or-later
#include "attention_view.h"

#include <QVBoxLayout>

namespace attnscope::render {

void AttentionView::setControlBar(QWidget* bar) {
  m_controlBar = bar;
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(bar);
  layout->addStretch(1);
}

QRect AttentionView::canvas() const {
  const bool shown = m_controlBar && m_controlBar->isVisible();
  return rect().adjusted(0, shown ? m_controlBar->geometry().bottom() + 1 : 0, 0, 0);
}

}  // namespace attnscope::render
