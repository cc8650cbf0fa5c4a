// SPDX-License-Identifier: GPL-3.0-or-later
#include "hub_names.h"

#include <algorithm>
#include <cctype>

#include "attnscope/error.h"

namespace attnscope::hub {
namespace {

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// Each '/'-separated part non-empty, not "." or "..", and every character allowed by `ok`.
template <typename Ok>
bool partsAreSafe(const std::string& s, Ok ok) {
  if (s.empty() || s.front() == '/' || s.back() == '/') return false;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find('/', start);
    if (end == std::string::npos) end = s.size();
    const std::string part = s.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    for (char c : part) {
      if (!ok(c)) return false;
    }
    start = end + 1;
  }
  return true;
}

}  // namespace

void checkRepoId(const std::string& repoId) {
  const std::string example = " (for example gpt2 or HuggingFaceTB/SmolLM2-135M)";
  if (repoId.empty()) throw Error(ErrorKind::InvalidArgument, "no model named" + example);
  const bool valid = repoId.size() <= 96 && repoId.find("--") == std::string::npos &&
                     repoId.find("..") == std::string::npos &&
                     std::count(repoId.begin(), repoId.end(), '/') <= 1 &&
                     partsAreSafe(repoId, isNameChar) && repoId.front() != '-' &&
                     repoId.front() != '.' && repoId.back() != '-' && repoId.back() != '.' &&
                     repoId.find("/-") == std::string::npos &&
                     repoId.find("/.") == std::string::npos;
  if (!valid)
    throw Error(
        ErrorKind::InvalidArgument,
        "'" + repoId + "' is not a Hugging Face model id: expected NAME or ORG/NAME" + example);
}

void checkRevision(const std::string& revision) {
  const auto ok = [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 && c != 0x7F && c != '\\' && c != ' ';
  };
  if (!partsAreSafe(revision, ok) || revision.size() > 255)
    throw Error(ErrorKind::InvalidArgument,
                "'" + revision + "' is not a revision: expected a branch, tag or commit hash");
}

bool isSafeRepoFile(const std::string& file) {
  const auto ok = [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 && c != 0x7F && c != '\\';
  };
  return file.size() <= 1024 && partsAreSafe(file, ok);
}

bool isCommitHash(const std::string& s) {
  if (s.size() != 40) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f')) return false;
  }
  return true;
}

bool isSafeEtag(const std::string& etag) {
  return !etag.empty() && etag.size() <= 255 && etag.find('/') == std::string::npos &&
         partsAreSafe(etag, isNameChar);
}

}  // namespace attnscope::hub
