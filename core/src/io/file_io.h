// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace attnscope {

/// Writes bytes to a temporary file next to `path`, flushes it to disk and renames it over `path`,
/// so readers see either the old file or the complete new one, never a partial write.
/// Throws Error(Io) "cannot write <path>: <reason>" and leaves no temporary file behind.
void writeFileAtomically(const std::string& path, const std::string& bytes);

/// The whole content of a regular file. Throws Error(Io) "cannot read <path>: <reason>".
std::string readFile(const std::string& path);

/// "cannot <verb> <path>: <reason>", the one wording for file errors.
std::string fileErrorMessage(const char* verb, const std::string& path, int errnoValue);

}  // namespace attnscope
