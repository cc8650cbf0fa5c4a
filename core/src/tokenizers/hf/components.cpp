// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/hf/components.h"

#include "attnscope/error.h"

namespace attnscope::hf {

void componentError(const std::string& component, const std::string& what) {
  throw Error(ErrorKind::Format, component + ": " + what);
}

bool boolField(const nlohmann::json& j, const char* key, bool fallback,
               const std::string& component) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_boolean())
    componentError(component, std::string("\"") + key + "\" must be true or false");
  return j[key].get<bool>();
}

std::string componentType(const nlohmann::json& json, const std::string& component) {
  if (!json.is_object())
    componentError(component, "expected an object, got " + json.dump().substr(0, 60));
  if (!json.contains("type") || !json["type"].is_string()) componentError(component, "no \"type\"");
  return json["type"].get<std::string>();
}

}  // namespace attnscope::hf
