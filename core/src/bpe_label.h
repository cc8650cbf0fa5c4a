// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <string_view>

namespace attnscope {

/// An axis label for a BPE token's raw bytes: space "␣", newline "⏎", tab "⇥", carriage return
/// "␍", other control bytes and bytes of an incomplete or invalid UTF-8 character "<0xE2>".
/// It means the same as readableLabel() in attnscope/utf8.h; the two are to be unified once that
/// is implemented.
std::string bpeLabel(std::string_view raw);

}  // namespace attnscope
