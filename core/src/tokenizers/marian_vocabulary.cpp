// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/marian_vocabulary.h"

#include <nlohmann/json.hpp>

#include <filesystem>

#include "attnscope/error.h"
#include "io/file_io.h"
#include "io/strict_json.h"

namespace attnscope {
namespace {

std::string marianFile(const std::string& folder, const char* name) {
  return (std::filesystem::path(folder) / name).string();
}

/// The vocabulary string of a SentencePiece token: its bytes with spaces as "▁".
std::string marianPieceString(const Token& piece) {
  std::string s = piece.text;
  for (std::size_t at = 0; (at = s.find(' ', at)) != std::string::npos; at += 3)
    s.replace(at, 1, "\xE2\x96\x81");
  return s;
}

}  // namespace

MarianVocabulary::MarianVocabulary(const std::string& folder)
    : m_file(marianFile(folder, "vocab.json")),
      m_source(SentencePieceTokenizer::fromFile(marianFile(folder, "source.spm"))),
      m_target(SentencePieceTokenizer::fromFile(marianFile(folder, "target.spm"))) {
  // Invalid JSON or UTF-8 is named as such, not as "not a JSON object"; a repeated piece keeps
  // its last id, as transformers' json.load does.
  const nlohmann::json vocab = parseStrictJson(readFile(m_file, kMaxConfigBytes), m_file, 64,
                                               /*invalidIsDiscarded=*/false,
                                               /*allowDuplicateKeys=*/true);
  if (!vocab.is_object()) throw Error(ErrorKind::Format, m_file + ": not a JSON object");
  for (const auto& [piece, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (1 << 22))
      throw Error(ErrorKind::Format,
                  m_file + ": the id of \"" + piece + "\" must be a whole number from 0");
    m_ids[piece] = id.get<int64_t>();
    m_pieces[id.get<int64_t>()] = piece;
  }
  const auto unk = m_ids.find("<unk>");
  if (unk == m_ids.end()) throw Error(ErrorKind::Format, m_file + " has no \"<unk>\"");
  m_unk = unk->second;
}

std::vector<Token> MarianVocabulary::encode(const std::string& text, bool target) const {
  const SentencePieceTokenizer& spm = target ? m_target : m_source;
  std::vector<Token> tokens = spm.encode(text);
  for (Token& t : tokens) {
    const auto id = m_ids.find(marianPieceString(spm.tokenOf(t.id)));
    t.unknown = t.unknown || id == m_ids.end();
    t.id = id == m_ids.end() ? m_unk : id->second;
  }
  return tokens;
}

Token MarianVocabulary::tokenOf(int64_t id) const {
  Token t;
  t.id = id;
  const auto piece = m_pieces.find(id);
  if (piece == m_pieces.end()) {
    t.label = "<id " + std::to_string(id) + ">";
    t.unknown = true;
    return t;
  }
  t.text = piece->second;
  // "▁" (U+2581) starts a word: shown and decoded as a space.
  for (std::size_t at; (at = t.text.find("\xE2\x96\x81")) != std::string::npos;)
    t.text.replace(at, 3, " ");
  t.label = piece->second;
  for (std::size_t at; (at = t.label.find("\xE2\x96\x81")) != std::string::npos;)
    t.label.replace(at, 3, "\xE2\x90\xA3");  // ␣
  t.special =
      piece->second.size() > 2 && piece->second.front() == '<' && piece->second.back() == '>';
  return t;
}

}  // namespace attnscope
