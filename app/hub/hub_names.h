// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace attnscope::hub {

/// Checks of the names that become paths in the cache and parts of URLs. A repo id, a revision
/// and a file name come from the user or from the server, and each ends up under the cache
/// folder: none may climb out of it ("..", absolute paths) or break a URL.

/// Throws Error (InvalidArgument) unless `repoId` is "name" or "org/name" as the Hub allows them
/// (letters, digits, '-', '_', '.'; no "--" or ".." inside, at most 96 characters).
void checkRepoId(const std::string& repoId);
/// Throws Error (InvalidArgument) unless `revision` is a branch, tag or commit that can be a
/// relative path under refs/ ("main", "v1.0", "refs/pr/1"; no "..", no empty part).
void checkRevision(const std::string& revision);
/// A file of the repository that may become snapshots/<commit>/<file>: relative, no "." or ".."
/// part, no empty part, no backslash or control character.
bool isSafeRepoFile(const std::string& file);
/// Forty lower-case hex digits: a commit hash as the Hub writes it.
bool isCommitHash(const std::string& s);
/// An ETag usable as a blob's file name: letters, digits, '-', '_', '.', not "." or "..".
bool isSafeEtag(const std::string& etag);

}  // namespace attnscope::hub
