// SPDX-License-Identifier: GPL-3.0-or-later
// Decoders, applied one token at a time: what a token's label shows.
#include <unordered_map>

#include "tokenizers/hf/byte_level_alphabet.h"
#include "tokenizers/hf/components.h"
#include "tokenizers/hf/regex.h"

namespace attnscope::hf {
namespace {

constexpr const char* kDecoder = "decoder";

std::string replaceAll(const std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size()) {
    out.append(s, at, hit - at);
    out += to;
  }
  out.append(s, at, std::string::npos);
  return out;
}

std::string stringField(const nlohmann::json& j, const char* key, const std::string& fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_string())
    componentError(kDecoder, std::string("\"") + key + "\" must be a string");
  return j[key].get<std::string>();
}

/// "Ġthe" -> " the": every character of GPT-2's byte alphabet back to its byte.
class ByteLevelDecoder final : public Decoder {
 public:
  std::string decodeToken(const std::string& token, bool) const override {
    std::string out;
    for (std::size_t i = 0; i < token.size();) {
      std::size_t len = 0;
      const char32_t c = decodeAt(token, i, &len);
      const int byte = byteOfAlphabetChar(c);
      if (byte < 0) return token;  // not a byte-level token (an added token, say): as it is
      out += static_cast<char>(byte);
      i += len;
    }
    return out;
  }
};

/// "<0xE2>" -> the byte E2.
class ByteFallbackDecoder final : public Decoder {
 public:
  std::string decodeToken(const std::string& token, bool) const override {
    if (token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>') {
      const auto hex = [](char c) {
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                      : -1;
      };
      const int hi = hex(token[3]), lo = hex(token[4]);
      if (hi >= 0 && lo >= 0) return std::string(1, static_cast<char>(hi * 16 + lo));
    }
    return token;
  }
};

class MetaspaceDecoder final : public Decoder {
 public:
  explicit MetaspaceDecoder(const nlohmann::json& j)
      : m_replacement(stringField(j, "replacement", "\xE2\x96\x81")) {}
  std::string decodeToken(const std::string& token, bool) const override {
    return replaceAll(token, m_replacement, " ");
  }

 private:
  std::string m_replacement;
};

class WordPieceDecoder final : public Decoder {
 public:
  explicit WordPieceDecoder(const nlohmann::json& j) : m_prefix(stringField(j, "prefix", "##")) {}
  std::string decodeToken(const std::string& token, bool) const override {
    return token.compare(0, m_prefix.size(), m_prefix) == 0 ? token.substr(m_prefix.size()) : token;
  }

 private:
  std::string m_prefix;
};

/// BPEDecoder: the end-of-word suffix stands for a space.
class BpeSuffixDecoder final : public Decoder {
 public:
  explicit BpeSuffixDecoder(const nlohmann::json& j) : m_suffix(stringField(j, "suffix", "</w>")) {}
  std::string decodeToken(const std::string& token, bool) const override {
    return replaceAll(token, m_suffix, " ");
  }

 private:
  std::string m_suffix;
};

class ReplaceDecoder final : public Decoder {
 public:
  explicit ReplaceDecoder(const nlohmann::json& j) : m_content(stringField(j, "content", "")) {
    const nlohmann::json& p = j.contains("pattern") ? j["pattern"] : nlohmann::json();
    if (p.is_object() && p.contains("String") && p["String"].is_string()) {
      m_string = p["String"].get<std::string>();
    } else if (p.is_object() && p.contains("Regex") && p["Regex"].is_string()) {
      m_regex = std::make_unique<Regex>(p["Regex"].get<std::string>());
    } else {
      componentError(kDecoder, "Replace needs a pattern {\"String\": …} or {\"Regex\": …}");
    }
  }
  std::string decodeToken(const std::string& token, bool) const override {
    if (!m_regex) return replaceAll(token, m_string, m_content);
    std::string out;
    std::size_t at = 0;
    for (const auto& [b, e] : m_regex->findAll(token)) {
      out.append(token, at, b - at);
      out += m_content;
      at = e;
    }
    out.append(token, at, std::string::npos);
    return out;
  }

 private:
  std::string m_string, m_content;
  std::unique_ptr<Regex> m_regex;
};

/// Fuse and Strip act on the whole decoded text; a single token's label is left as it is.
class IdentityDecoder final : public Decoder {
 public:
  std::string decodeToken(const std::string& token, bool) const override { return token; }
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(const nlohmann::json& j) {
    if (!j.contains("decoders") || !j["decoders"].is_array())
      componentError(kDecoder, "Sequence needs \"decoders\"");
    const SequenceNesting nesting(kDecoder);
    for (const nlohmann::json& d : j["decoders"]) m_steps.push_back(makeDecoder(d));
  }
  std::string decodeToken(const std::string& token, bool first) const override {
    std::string t = token;
    for (const auto& step : m_steps) t = step->decodeToken(t, first);
    return t;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> m_steps;
};

}  // namespace

std::unique_ptr<Decoder> makeDecoder(const nlohmann::json& j) {
  const std::string type = componentType(j, kDecoder);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Metaspace") return std::make_unique<MetaspaceDecoder>(j);
  if (type == "WordPiece") return std::make_unique<WordPieceDecoder>(j);
  if (type == "BPEDecoder") return std::make_unique<BpeSuffixDecoder>(j);
  if (type == "Replace") return std::make_unique<ReplaceDecoder>(j);
  if (type == "Fuse" || type == "Strip") return std::make_unique<IdentityDecoder>();
  if (type == "Sequence") return std::make_unique<SequenceDecoder>(j);
  componentError(kDecoder,
                 "type \"" + type +
                     "\" is not supported; supported: BPEDecoder, ByteFallback, ByteLevel, Fuse, "
                     "Metaspace, Replace, Sequence, Strip, WordPiece");
}

}  // namespace attnscope::hf
