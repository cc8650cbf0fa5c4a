// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QDialog>
#include <QList>

class QAction;

namespace attnscope::gui {

/// Help > Keyboard Shortcuts: a table built from the window's actions themselves, so the list
/// cannot drift from the real bindings.
class ShortcutsDialog final : public QDialog {
  Q_OBJECT
 public:
  ShortcutsDialog(const QList<QAction*>& actions, QWidget* parent = nullptr);
};

}  // namespace attnscope::gui
