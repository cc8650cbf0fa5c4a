// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace attnscope::cli {

/// Reads a whole UTF-8 text file. Throws attnscope::Error (Io when unreadable, InvalidArgument
/// for invalid UTF-8) with a message naming the flag and the path.
std::string readTextFile(const std::string& path, const std::string& flag);

}  // namespace attnscope::cli
