// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/hf/components.h"

#include "attnscope/error.h"

namespace attnscope::hf {

void componentError(const std::string& component, const std::string& what) {
  throw Error(ErrorKind::Format, component + ": " + what);
}

std::string componentType(const nlohmann::json& json, const std::string& component) {
  if (!json.is_object())
    componentError(component, "expected an object, got " + json.dump().substr(0, 60));
  if (!json.contains("type") || !json["type"].is_string()) componentError(component, "no \"type\"");
  return json["type"].get<std::string>();
}

}  // namespace attnscope::hf
