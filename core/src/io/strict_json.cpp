// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/strict_json.h"

#include <unordered_set>

#include "attnscope/error.h"
#include "attnscope/json_check.h"

namespace attnscope {
namespace {

using Json = nlohmann::json;

// nlohmann's own DOM builder (linear), with the key and depth checks in front of it.
class CheckingSax {
 public:
  CheckingSax(CheckedJson& out, std::size_t maxDepth, bool keepOrder, bool allowDuplicates)
      : m_out(out),
        m_dom(out.value, /*allow_exceptions=*/false),
        m_maxDepth(maxDepth),
        m_keepOrder(keepOrder),
        m_allowDuplicates(allowDuplicates) {}

  bool null() { return m_dom.null(); }
  bool boolean(bool v) { return m_dom.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return m_dom.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return m_dom.number_unsigned(v); }
  bool number_float(Json::number_float_t v, const Json::string_t& s) {
    return m_dom.number_float(v, s);
  }
  bool string(Json::string_t& v) { return m_dom.string(v); }
  bool binary(Json::binary_t& v) { return m_dom.binary(v); }
  bool start_object(std::size_t n) { return enter() && m_dom.start_object(n); }
  bool end_object() {
    --m_depth;
    return m_dom.end_object();
  }
  bool start_array(std::size_t n) { return enter() && m_dom.start_array(n); }
  bool end_array() {
    --m_depth;
    return m_dom.end_array();
  }
  bool key(Json::string_t& k) {
    if (!m_allowDuplicates && !m_keys[m_depth - 1].insert(k).second) {
      m_out.problem = CheckedJson::Problem::DuplicateKey;
      m_out.detail = k;
      return false;
    }
    if (m_keepOrder && m_depth == 1) m_out.topLevelKeys.push_back(k);
    return m_dom.key(k);
  }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& e) {
    m_out.problem = CheckedJson::Problem::Invalid;
    // "byte 41, parse error at line 3, column 1: …": where to look, without nlohmann's id.
    std::string what = e.what();
    if (!what.empty() && what.front() == '[') {
      const std::size_t close = what.find("] ");
      if (close != std::string::npos) what.erase(0, close + 2);
    }
    m_out.detail = "byte " + std::to_string(byte) + ", " + what;
    return false;
  }

 private:
  bool enter() {
    if (m_depth >= m_maxDepth) {
      m_out.problem = CheckedJson::Problem::TooDeep;
      return false;
    }
    // One set per nesting level, reused by the siblings that follow (no allocation per object);
    // arrays get one too, so the levels stay aligned.
    if (m_keys.size() <= m_depth) m_keys.emplace_back();
    m_keys[m_depth++].clear();
    return true;
  }
  CheckedJson& m_out;
  nlohmann::detail::json_sax_dom_parser<Json> m_dom;
  std::vector<std::unordered_set<std::string>> m_keys;  // [depth]: keys of the open object
  std::size_t m_depth = 0;
  std::size_t m_maxDepth;
  bool m_keepOrder;
  bool m_allowDuplicates;
};

}  // namespace

CheckedJson parseJsonChecked(std::string_view text, std::size_t maxDepth, bool keepTopLevelOrder,
                             bool allowDuplicateKeys) {
  CheckedJson out;
  CheckingSax sax(out, maxDepth, keepTopLevelOrder, allowDuplicateKeys);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &sax);
  if (!ok && out.problem == CheckedJson::Problem::None) out.problem = CheckedJson::Problem::Invalid;
  if (out.problem != CheckedJson::Problem::None) out.value = Json();
  return out;
}

nlohmann::json parseStrictJson(std::string_view text, const std::string& source,
                               std::size_t maxDepth, bool invalidIsDiscarded,
                               bool allowDuplicateKeys) {
  CheckedJson r = parseJsonChecked(text, maxDepth, false, allowDuplicateKeys);
  switch (r.problem) {
    case CheckedJson::Problem::None:
      return std::move(r.value);
    case CheckedJson::Problem::DuplicateKey:
      throw Error(ErrorKind::Format, source + ": duplicate key \"" + r.detail + "\"");
    case CheckedJson::Problem::TooDeep:
      throw Error(ErrorKind::Format,
                  source + ": JSON nested more than " + std::to_string(maxDepth) + " levels deep");
    case CheckedJson::Problem::Invalid:
      break;
  }
  if (invalidIsDiscarded) return Json(Json::value_t::discarded);
  throw Error(ErrorKind::Format, source + ": not valid JSON (" + r.detail + ")");
}

std::optional<std::string> findDuplicateJsonKey(std::string_view text) {
  const CheckedJson r = parseJsonChecked(text, 512);
  if (r.problem == CheckedJson::Problem::DuplicateKey) return r.detail;
  return std::nullopt;
}

}  // namespace attnscope
