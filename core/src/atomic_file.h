// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace attnscope {

/// Writes bytes to a temporary file beside path, then renames it over path, so a failed write
/// never leaves a partial file. Throws Error(Io) naming the path and the reason.
void writeFileAtomically(const std::string& path, const std::string& bytes);

}  // namespace attnscope
