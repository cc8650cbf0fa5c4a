// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace attnscope {

/// The first key that appears twice in one object of a JSON text, for readers whose own parser
/// (QJsonDocument, say) silently keeps the last of duplicates. Nothing for valid JSON without
/// duplicates, and nothing for invalid JSON either (the caller's parser reports that).
std::optional<std::string> findDuplicateJsonKey(std::string_view text);

}  // namespace attnscope
