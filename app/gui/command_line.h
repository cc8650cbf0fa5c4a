// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

namespace attnscope::gui {

/// The process arguments with "--session FILE" and "-session FILE" rewritten as
/// "--session=FILE". QApplication takes "-session NAME" (either dash count) for X11 session
/// management and removes it before our parser sees it, which silently opened "Untitled";
/// the joined form passes through untouched.
std::vector<std::string> sessionSafeArguments(int argc, char** argv);

}  // namespace attnscope::gui
