// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace attnscope::cli {

/// Reads a whole UTF-8 text file of at most maxBytes. Throws attnscope::Error (Io when unreadable
/// or not a regular file, ResourceLimit when larger, InvalidArgument for invalid UTF-8) with a
/// message naming the flag and the path.
std::string readTextFile(const std::string& path, const std::string& flag,
                         uint64_t maxBytes = 256ull << 20);

/// Throws attnscope::Error(Io) naming the flag when `path` cannot be written (a folder, a missing
/// or read-only parent), so a command refuses before it computes anything.
void checkOutputPath(const std::string& path, const std::string& flag);

}  // namespace attnscope::cli
