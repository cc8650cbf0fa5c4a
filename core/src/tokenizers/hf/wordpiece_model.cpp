// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/hf/wordpiece_model.h"

#include <algorithm>

#include "attnscope/error.h"

namespace attnscope::hf {

namespace {

std::string stringField(const nlohmann::json& json, const char* field, const char* fallback) {
  auto it = json.find(field);
  if (it == json.end()) return fallback;
  if (!it->is_string()) componentError("model", std::string(field) + " must be a string");
  return it->get<std::string>();
}

// The start of the character that ends at `end` (exclusive) in s.
std::size_t lastCharStart(std::string_view s, std::size_t begin, std::size_t end) {
  std::size_t i = end - 1;
  while (i > begin && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}

}  // namespace

WordPieceModel::WordPieceModel(std::vector<std::pair<std::string, uint32_t>> vocab,
                               std::string unkToken, std::string continuingSubwordPrefix,
                               std::size_t maxInputCharsPerWord)
    : m_unkToken(std::move(unkToken)),
      m_prefix(std::move(continuingSubwordPrefix)),
      m_maxChars(maxInputCharsPerWord) {
  m_vocab = Vocabulary(std::move(vocab));
}

std::unique_ptr<WordPieceModel> WordPieceModel::fromJson(const nlohmann::json& json) {
  if (!json.is_object()) componentError("model", "a WordPiece model must be an object");
  Vocabulary::Entries vocab = Vocabulary::parseJson(json);
  std::size_t maxChars = 100;
  auto mit = json.find("max_input_chars_per_word");
  if (mit != json.end()) {
    if (!mit->is_number_integer() || mit->get<int64_t>() < 0) {
      componentError("model", "max_input_chars_per_word must be a non-negative integer");
    }
    maxChars = mit->get<std::size_t>();
  }
  return std::make_unique<WordPieceModel>(std::move(vocab), stringField(json, "unk_token", "[UNK]"),
                                          stringField(json, "continuing_subword_prefix", "##"),
                                          maxChars);
}

std::optional<int64_t> WordPieceModel::tokenToId(std::string_view token) const {
  return m_vocab.tokenToId(token);
}

std::string WordPieceModel::idToToken(int64_t id) const { return m_vocab.idToToken(id); }

std::vector<ModelToken> WordPieceModel::unk(std::string_view piece) const {
  const uint32_t* id = m_vocab.find(m_unkToken);
  if (!id) {
    throw Error(ErrorKind::InvalidArgument, "model: unk_token \"" + m_unkToken +
                                                "\" is needed for \"" + std::string(piece) +
                                                "\" but is not in the vocabulary");
  }
  return {ModelToken{*id, m_unkToken, 0, piece.size()}};
}

std::vector<ModelToken> WordPieceModel::tokenize(std::string_view piece) const {
  std::size_t chars = 0;
  for (unsigned char c : piece) chars += (c & 0xC0) != 0x80;
  if (chars > m_maxChars) return unk(piece);

  std::vector<ModelToken> out;
  thread_local std::string buffer;
  std::size_t start = 0;
  while (start < piece.size()) {
    const std::size_t extra = start > 0 ? m_prefix.size() : 0;
    std::size_t end = piece.size();
    // Candidates longer than any vocabulary entry cannot match: skip them (same result as HF's
    // walk from the full remainder, one character at a time). In one step, to the last character
    // boundary that fits: walking back one character at a time made a long word (with
    // max_input_chars_per_word 1e9) quadratic.
    const std::size_t room = m_vocab.maxTokenBytes() > extra ? m_vocab.maxTokenBytes() - extra : 0;
    if (end - start > room) {
      end = start + room;
      while (end > start && (static_cast<unsigned char>(piece[end]) & 0xC0) == 0x80) --end;
    }
    const uint32_t* found = nullptr;
    while (start < end) {
      std::string_view candidate = piece.substr(start, end - start);
      if (extra) {
        buffer.assign(m_prefix);
        buffer.append(candidate.data(), candidate.size());
        candidate = buffer;
      }
      found = m_vocab.find(candidate);
      if (found) {
        out.push_back(ModelToken{*found, std::string(candidate), start, end});
        break;
      }
      end = lastCharStart(piece, start, end);
    }
    if (!found) return unk(piece);
    start = end;
  }
  return out;
}

}  // namespace attnscope::hf
