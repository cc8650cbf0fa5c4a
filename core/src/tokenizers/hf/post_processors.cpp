// SPDX-License-Identifier: GPL-3.0-or-later
// Post-processors: where special tokens go ([CLS] A [SEP] B [SEP], <s> A, ...), type ids, and the
// ByteLevel offset trimming.
#include <map>

#include "tokenizers/hf/components.h"
#include "tokenizers/hf/unicode_class.h"

namespace attnscope::hf {
namespace {

constexpr const char* kPostProcessor = "post_processor";

EncodedToken specialToken(const std::string& value, int64_t id, uint32_t typeId) {
  EncodedToken t;
  t.id = id;
  t.value = value;
  t.typeId = typeId;
  t.special = true;
  t.sequence = -1;
  return t;
}

/// (token, id) as BertProcessing and RobertaProcessing store cls and sep: ["[CLS]", 101].
std::pair<std::string, int64_t> tokenPair(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_array() || j[key].size() != 2 || !j[key][0].is_string() ||
      !j[key][1].is_number_integer()) {
    componentError(kPostProcessor, std::string("\"") + key + "\" must be [token, id]");
  }
  return {j[key][0].get<std::string>(), j[key][1].get<int64_t>()};
}

/// Hugging Face's process_offsets: offsets lose the spaces ("Ġ" or whitespace) a token starts or
/// ends with, except the one space add_prefix_space put before the first token.
void trimOffsets(std::vector<EncodedToken>& tokens, bool addPrefixSpace) {
  static const std::string kSpace = "\xC4\xA0";  // "Ġ"
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    EncodedToken& t = tokens[i];
    const std::string& v = t.value;
    std::size_t leading = 0, trailing = 0;
    std::vector<char32_t> chars;
    for (std::size_t k = 0; k < v.size();) {
      std::size_t len = 0;
      chars.push_back(decodeAt(v, k, &len));
      k += len;
    }
    const auto isSpace = [](char32_t c) { return c == 0x120 || isWhitespace(c); };
    while (leading < chars.size() && isSpace(chars[leading])) ++leading;
    while (trailing < chars.size() && isSpace(chars[chars.size() - 1 - trailing])) ++trailing;
    if (leading == 0 && trailing == 0) continue;
    if (leading > 0) {
      const bool first = i == 0 || t.offsets.begin == 0;
      if (first && addPrefixSpace && leading == 1) leading = 0;
      t.offsets.begin =
          std::min<uint32_t>(t.offsets.begin + static_cast<uint32_t>(leading), t.offsets.end);
    }
    if (trailing > 0 && t.offsets.end >= trailing) {
      t.offsets.end =
          std::max<uint32_t>(t.offsets.end - static_cast<uint32_t>(trailing), t.offsets.begin);
    }
  }
}

bool flag(const nlohmann::json& j, const char* key, bool fallback) {
  return j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : fallback;
}

class ByteLevelProcessor final : public PostProcessor {
 public:
  explicit ByteLevelProcessor(const nlohmann::json& j)
      : m_trim(flag(j, "trim_offsets", true)),
        m_addPrefixSpace(flag(j, "add_prefix_space", true)) {}
  Encodings process(Encodings e) const override {
    if (m_trim) {
      for (auto& seq : e) trimOffsets(seq, m_addPrefixSpace);
    }
    return e;
  }

 private:
  bool m_trim, m_addPrefixSpace;
};

class BertProcessor final : public PostProcessor {
 public:
  explicit BertProcessor(const nlohmann::json& j)
      : m_sep(tokenPair(j, "sep")), m_cls(tokenPair(j, "cls")) {}
  Encodings process(Encodings e) const override {
    std::vector<EncodedToken> a{specialToken(m_cls.first, m_cls.second, 0)};
    for (EncodedToken& t : e[0]) a.push_back(t);
    a.push_back(specialToken(m_sep.first, m_sep.second, 0));
    Encodings out{std::move(a)};
    if (e.size() > 1) {
      std::vector<EncodedToken> b;
      for (EncodedToken& t : e[1]) {
        t.typeId = 1;
        b.push_back(t);
      }
      b.push_back(specialToken(m_sep.first, m_sep.second, 1));
      out.push_back(std::move(b));
    }
    return out;
  }

 private:
  std::pair<std::string, int64_t> m_sep, m_cls;
};

class RobertaProcessor final : public PostProcessor {
 public:
  explicit RobertaProcessor(const nlohmann::json& j)
      : m_sep(tokenPair(j, "sep")),
        m_cls(tokenPair(j, "cls")),
        m_trim(flag(j, "trim_offsets", true)),
        m_addPrefixSpace(flag(j, "add_prefix_space", true)) {}
  Encodings process(Encodings e) const override {
    if (m_trim) {
      for (auto& seq : e) trimOffsets(seq, m_addPrefixSpace);
    }
    Encodings out;
    for (std::size_t i = 0; i < e.size(); ++i) {
      std::vector<EncodedToken> s;
      s.push_back(i == 0 ? specialToken(m_cls.first, m_cls.second, 0)
                         : specialToken(m_sep.first, m_sep.second, 0));
      for (EncodedToken& t : e[i]) {
        t.typeId = 0;
        s.push_back(t);
      }
      s.push_back(specialToken(m_sep.first, m_sep.second, 0));
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  std::pair<std::string, int64_t> m_sep, m_cls;
  bool m_trim, m_addPrefixSpace;
};

class TemplateProcessor final : public PostProcessor {
 public:
  explicit TemplateProcessor(const nlohmann::json& j) {
    if (j.contains("special_tokens") && j["special_tokens"].is_object()) {
      for (const auto& [name, value] : j["special_tokens"].items()) {
        if (!value.contains("ids") || !value["ids"].is_array() || !value.contains("tokens") ||
            !value["tokens"].is_array() || value["ids"].size() != value["tokens"].size()) {
          componentError(kPostProcessor, "special_tokens[\"" + name +
                                             "\"] needs \"ids\" and \"tokens\" of one length");
        }
        Special s;
        for (std::size_t i = 0; i < value["ids"].size(); ++i) {
          s.ids.push_back(value["ids"][i].get<int64_t>());
          s.tokens.push_back(value["tokens"][i].get<std::string>());
        }
        m_specials[name] = s;
      }
    }
    m_single = parse(j, "single");
    m_pair = j.contains("pair") ? parse(j, "pair") : std::vector<Piece>{};
  }

  Encodings process(Encodings e) const override {
    const std::vector<Piece>& tmpl = e.size() > 1 ? m_pair : m_single;
    std::vector<EncodedToken> out;
    for (const Piece& p : tmpl) {
      if (p.sequence >= 0) {
        if (static_cast<std::size_t>(p.sequence) >= e.size()) continue;
        for (EncodedToken t : e[static_cast<std::size_t>(p.sequence)]) {
          t.typeId = p.typeId;
          out.push_back(std::move(t));
        }
      } else {
        const Special& s = m_specials.at(p.special);
        for (std::size_t i = 0; i < s.ids.size(); ++i)
          out.push_back(specialToken(s.tokens[i], s.ids[i], p.typeId));
      }
    }
    return {out};
  }

 private:
  struct Piece {
    int sequence = -1;    // 0 for $A, 1 for $B, -1 for a special token
    std::string special;  // its name in special_tokens
    uint32_t typeId = 0;
  };
  struct Special {
    std::vector<int64_t> ids;
    std::vector<std::string> tokens;
  };

  std::vector<Piece> parse(const nlohmann::json& j, const char* key) const {
    if (!j.contains(key) || !j[key].is_array())
      componentError(kPostProcessor, std::string("\"") + key + "\" must be an array");
    std::vector<Piece> out;
    for (const nlohmann::json& item : j[key]) {
      Piece p;
      if (item.contains("Sequence")) {
        const std::string id = item["Sequence"].value("id", "A");
        if (id != "A" && id != "B")
          componentError(kPostProcessor, "sequence id \"" + id + "\" must be A or B");
        p.sequence = id == "A" ? 0 : 1;
        p.typeId = item["Sequence"].value("type_id", 0u);
      } else if (item.contains("SpecialToken")) {
        p.special = item["SpecialToken"].value("id", "");
        p.typeId = item["SpecialToken"].value("type_id", 0u);
        if (!m_specials.count(p.special)) {
          componentError(kPostProcessor, "template names special token \"" + p.special +
                                             "\" that special_tokens lacks");
        }
      } else {
        componentError(
            kPostProcessor,
            std::string("\"") + key + "\" has a piece that is neither Sequence nor SpecialToken");
      }
      out.push_back(p);
    }
    return out;
  }

  std::map<std::string, Special> m_specials;
  std::vector<Piece> m_single, m_pair;
};

class SequenceProcessor final : public PostProcessor {
 public:
  explicit SequenceProcessor(const nlohmann::json& j) {
    if (!j.contains("processors") || !j["processors"].is_array())
      componentError(kPostProcessor, "Sequence needs \"processors\"");
    const SequenceNesting nesting(kPostProcessor);
    for (const nlohmann::json& p : j["processors"]) m_steps.push_back(makePostProcessor(p));
  }
  Encodings process(Encodings e) const override {
    for (const auto& step : m_steps) e = step->process(std::move(e));
    return e;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> m_steps;
};

}  // namespace

std::unique_ptr<PostProcessor> makePostProcessor(const nlohmann::json& j) {
  const std::string type = componentType(j, kPostProcessor);
  if (type == "TemplateProcessing") return std::make_unique<TemplateProcessor>(j);
  if (type == "BertProcessing") return std::make_unique<BertProcessor>(j);
  if (type == "RobertaProcessing") return std::make_unique<RobertaProcessor>(j);
  if (type == "ByteLevel") return std::make_unique<ByteLevelProcessor>(j);
  if (type == "Sequence") return std::make_unique<SequenceProcessor>(j);
  componentError(
      kPostProcessor,
      "type \"" + type +
          "\" is not supported; supported: BertProcessing, ByteLevel, RobertaProcessing, "
          "Sequence, TemplateProcessing");
}

}  // namespace attnscope::hf
