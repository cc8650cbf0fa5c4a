// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "models/config_reader.h"

namespace attnscope::fuzz {

/// The input as a family's config parser sees it: a ConfigReader of a JSON object, or nothing for
/// input ConfigReader::fromFile refuses before any field (not JSON, not an object).
inline std::optional<ConfigReader> configReaderOf(const uint8_t* data, size_t size) {
  nlohmann::json j = nlohmann::json::parse(reinterpret_cast<const char*>(data),
                                           reinterpret_cast<const char*>(data) + size, nullptr,
                                           /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  return ConfigReader(std::move(j), "fuzz");
}

}  // namespace attnscope::fuzz
