// SPDX-License-Identifier: GPL-3.0-or-later
#include "shortcuts_dialog.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QTableWidget>
#include <QVBoxLayout>

namespace attnscope::gui {

ShortcutsDialog::ShortcutsDialog(const QList<QAction*>& actions, QWidget* parent)
    : QDialog(parent) {
  setWindowTitle(tr("Keyboard Shortcuts"));
  auto* table = new QTableWidget(this);
  table->setColumnCount(2);
  table->setHorizontalHeaderLabels({tr("Action"), tr("Shortcut")});
  table->verticalHeader()->hide();
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setSelectionMode(QAbstractItemView::NoSelection);
  for (QAction* action : actions) {
    if (action->shortcuts().isEmpty()) continue;
    QStringList keys;
    for (const QKeySequence& k : action->shortcuts()) keys << k.toString(QKeySequence::NativeText);
    const int row = table->rowCount();
    table->insertRow(row);
    table->setItem(
        row, 0,
        new QTableWidgetItem(action->text().remove(QLatin1Char('&')).remove(QStringLiteral("…"))));
    table->setItem(row, 1, new QTableWidgetItem(keys.join(QStringLiteral(", "))));
  }
  table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(table);
  layout->addWidget(buttons);
  resize(table->horizontalHeader()->length() + 200, 520);
}

}  // namespace attnscope::gui
