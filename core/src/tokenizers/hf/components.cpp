// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/hf/components.h"

#include "attnscope/error.h"

namespace attnscope::hf {
namespace {
// Per thread: two tokenizers may be read at once on different threads.
thread_local int t_sequenceDepth = 0;
}  // namespace

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

SequenceNesting::SequenceNesting(const std::string& component) {
  if (t_sequenceDepth >= kMaxSequenceNesting)
    componentError(component, "Sequence nested more than " + std::to_string(kMaxSequenceNesting) +
                                  " levels deep");
  ++t_sequenceDepth;
}

SequenceNesting::~SequenceNesting() { --t_sequenceDepth; }

}  // namespace attnscope::hf
