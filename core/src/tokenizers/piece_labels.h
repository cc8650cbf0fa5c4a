// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

namespace attnscope {

/// Axis labels for the decoded bytes of consecutive tokens. A token whose bytes are part of a
/// character (byte fallback "<0xE2>", byte-level BPE splitting an emoji) is labelled with the whole
/// character(s) its run of tokens spells, so no raw byte reaches the user; others get
/// readableLabel of their own bytes.
std::vector<std::string> pieceLabels(const std::vector<std::string>& bytes);

}  // namespace attnscope
