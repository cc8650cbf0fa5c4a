// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QCoreApplication>
#include <QString>

namespace attnscope::gui {

/// The core's messages speak to the CLI ("raise --max-tokens"); the window has menus and fields
/// instead of flags. This is the one place that rewrites that advice for the window.
class CoreMessage final {
  Q_DECLARE_TR_FUNCTIONS(CoreMessage)
 public:
  /// `message` with each CLI flag's advice replaced by the window's own way to do it.
  static QString forWindow(const QString& message);
};

}  // namespace attnscope::gui
