// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QString>

namespace attnscope::gui {

/// The window's colours: the system's, or light or dark whatever the system says (a projector in
/// a bright room, a dark lecture hall). The views and exports draw with the window's palette.
enum class Theme { System, Light, Dark };

QString toString(Theme theme);  // "system" | "light" | "dark"
/// Unknown names give System.
Theme parseTheme(const QString& name);
/// Sets the application's style and palette. The first call remembers the system's, so System
/// restores them.
void applyTheme(Theme theme);

}  // namespace attnscope::gui
