// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/bpe_tokenizer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <utility>

#include "attnscope/error.h"
#include "attnscope/utf8.h"
#include "io/file_io.h"
#include "tokenizers/gpt2_pretokenizer.h"

namespace attnscope {
namespace {

constexpr int32_t kNoSymbol = -1;

uint64_t pairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

/// GPT-2 stores tokens as text by mapping each byte to a printable code point (bytes_to_unicode in
/// encoder.py): printable Latin-1 bytes map to themselves, the other 68 to U+0100.. in byte order.
/// We undo that once at load time and work on raw bytes from then on.
const std::array<int, 256 + 68>& byteOfCodePoint() {
  static const std::array<int, 256 + 68> table = [] {
    std::array<int, 256 + 68> t{};
    t.fill(-1);  // outside the alphabet
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      t[printable ? b : 256 + next++] = b;
    }
    return t;
  }();
  return table;
}

/// The raw bytes a vocab or merges string stands for; false if it holds a code point outside the
/// byte-level alphabet.
bool alphabetToBytes(std::string_view s, std::string& out) {
  const auto& byteOf = byteOfCodePoint();
  out.clear();
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    char32_t cp = 0;
    // The alphabet ends at U+0143, so one- and two-byte sequences are all there is to decode.
    if (b < 0x80) {
      cp = b;
      i += 1;
    } else if ((b & 0xE0) == 0xC0 && i + 1 < s.size() &&
               (static_cast<unsigned char>(s[i + 1]) & 0xC0) == 0x80) {
      cp = (static_cast<char32_t>(b & 0x1F) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3F);
      i += 2;
    } else {
      return false;
    }
    if (cp >= byteOf.size() || byteOf[cp] < 0) return false;
    out += static_cast<char>(byteOf[cp]);
  }
  return true;
}

struct MergeCandidate {
  int32_t rank;
  int32_t left;  // index of the left symbol; orders equal ranks left to right
  int32_t leftId;
  int32_t rightId;
  int32_t mergedId;
  bool operator>(const MergeCandidate& o) const {
    return rank != o.rank ? rank > o.rank : left > o.left;
  }
};

/// Scratch space reused across the pieces of one encode call.
struct MergeScratch {
  std::vector<int32_t> ids;   // symbol -> token id, kNoSymbol once merged into its left neighbour
  std::vector<int32_t> next;  // linked list over the surviving symbols
  std::vector<int32_t> prev;
  std::vector<MergeCandidate> heap;
};

/// Byte-pair merging of one piece. GPT-2's encoder.py repeatedly merges every occurrence of the
/// lowest-ranked adjacent pair, left to right, which is quadratic in the piece length (a megabyte
/// of one letter is one piece). A heap of candidate pairs ordered by (rank, position) gives the
/// same result in n log n: a merge only creates pairs containing the new token, and in a merges
/// file learned in order those rank after the merge that made the token, so every occurrence of the
/// current rank is still done, left to right, before anything the merges created.
template <typename MergeMap>
void mergePiece(std::string_view piece, const std::array<int32_t, 256>& byteIds,
                const MergeMap& merges, MergeScratch& s, std::vector<int32_t>& out) {
  const auto n = static_cast<int32_t>(piece.size());
  if (n == 1) {
    out.push_back(byteIds[static_cast<unsigned char>(piece[0])]);
    return;
  }
  s.ids.resize(n);
  s.next.resize(n);
  s.prev.resize(n);
  s.heap.clear();
  const std::greater<MergeCandidate> later;
  auto consider = [&](int32_t left) {
    const int32_t right = s.next[left];
    if (right == kNoSymbol) return;
    const auto it = merges.find(pairKey(s.ids[left], s.ids[right]));
    if (it == merges.end()) return;
    s.heap.push_back({it->second.rank, left, s.ids[left], s.ids[right], it->second.id});
    std::push_heap(s.heap.begin(), s.heap.end(), later);
  };
  for (int32_t i = 0; i < n; ++i) {
    s.ids[i] = byteIds[static_cast<unsigned char>(piece[i])];
    s.next[i] = i + 1 < n ? i + 1 : kNoSymbol;
    s.prev[i] = i - 1;
  }
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), later);
    const MergeCandidate c = s.heap.back();
    s.heap.pop_back();
    const int32_t right = s.next[c.left];
    // Stale: one of the two symbols has been merged with something else since.
    if (s.ids[c.left] != c.leftId || right == kNoSymbol || s.ids[right] != c.rightId) continue;
    s.ids[c.left] = c.mergedId;
    s.ids[right] = kNoSymbol;
    s.next[c.left] = s.next[right];
    if (s.next[right] != kNoSymbol) s.prev[s.next[right]] = c.left;
    if (s.prev[c.left] != kNoSymbol) consider(s.prev[c.left]);
    consider(c.left);
  }
  for (int32_t i = 0; i != kNoSymbol; i = s.next[i]) out.push_back(s.ids[i]);
}

}  // namespace

// Long (~100 lines) on purpose: vocab.json and merges.txt are validated line by line with messages
// that name the file and line; the checks share the maps being built.
BpeTokenizer BpeTokenizer::fromFiles(const std::string& vocabJsonPath,
                                     const std::string& mergesPath) {
  BpeTokenizer tok;

  // stat before open, with a size cap: a FIFO or a device must not block or fill memory.
  const std::string vocabText = readFile(vocabJsonPath, kMaxTokenizerBytes);
  nlohmann::json vocab;
  try {
    vocab = nlohmann::json::parse(vocabText);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Format, vocabJsonPath + ": not valid JSON (" + e.what() + ")");
  }
  if (!vocab.is_object() || vocab.empty()) {
    throw Error(ErrorKind::Format,
                vocabJsonPath + ": expected a JSON object mapping token strings to ids");
  }
  const std::size_t count = vocab.size();
  if (count > static_cast<std::size_t>(std::numeric_limits<int32_t>::max())) {
    throw Error(ErrorKind::Format, vocabJsonPath + ": too many tokens");
  }
  tok.m_tokenBytes.resize(count);
  std::vector<bool> seen(count, false);
  std::unordered_map<std::string, int32_t> idOfBytes;
  idOfBytes.reserve(count);
  std::string bytes;
  for (const auto& [key, value] : vocab.items()) {
    // Ids index the model's embedding rows, so they must be exactly 0..count-1.
    if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
        value.get<int64_t>() >= static_cast<int64_t>(count)) {
      throw Error(ErrorKind::Format, vocabJsonPath + ": token \"" + key + "\" has id " +
                                         value.dump() + "; ids must be integers 0.." +
                                         std::to_string(count - 1));
    }
    const auto id = value.get<int32_t>();
    if (seen[id]) {
      throw Error(ErrorKind::Format, vocabJsonPath + ": id " + std::to_string(id) +
                                         " is given to more than one token");
    }
    seen[id] = true;
    if (!alphabetToBytes(key, bytes) || bytes.empty()) {
      throw Error(ErrorKind::Format,
                  vocabJsonPath + ": token \"" + key + "\" is not in GPT-2's byte-level alphabet");
    }
    tok.m_tokenBytes[id] = bytes;
    idOfBytes.emplace(bytes, id);
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = idOfBytes.find(std::string(1, static_cast<char>(b)));
    if (it == idOfBytes.end()) {
      throw Error(ErrorKind::Format, vocabJsonPath + ": no token for byte " + std::to_string(b) +
                                         "; a byte-level vocabulary needs all 256");
    }
    tok.m_byteIds[b] = it->second;
  }

  const std::string mergesText = readFile(mergesPath, kMaxTokenizerBytes);
  // A zero-byte merges.txt is a truncated download or a copy gone wrong, not a tokenizer.
  if (mergesText.find_first_not_of(" \t\r\n") == std::string::npos)
    throw Error(ErrorKind::Format,
                mergesPath + ": the file is empty (expected one merge per line)");
  std::size_t lineNo = 0;
  int32_t rank = 0;
  std::string left;
  std::string right;
  for (std::size_t pos = 0; pos < mergesText.size();) {
    std::size_t eol = mergesText.find('\n', pos);
    if (eol == std::string::npos) eol = mergesText.size();
    std::string_view line(mergesText.data() + pos, eol - pos);
    pos = eol + 1;
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (lineNo == 1 && line.substr(0, 8) == "#version")) continue;
    auto fail = [&](const std::string& why) {
      throw Error(ErrorKind::Format, mergesPath + " line " + std::to_string(lineNo) + ": " + why);
    };
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      fail("expected two tokens separated by one space, got \"" + std::string(line) + "\"");
    }
    if (!alphabetToBytes(line.substr(0, space), left) ||
        !alphabetToBytes(line.substr(space + 1), right)) {
      fail("\"" + std::string(line) + "\" is not in GPT-2's byte-level alphabet");
    }
    const auto l = idOfBytes.find(left);
    const auto r = idOfBytes.find(right);
    const auto merged = idOfBytes.find(left + right);
    if (l == idOfBytes.end() || r == idOfBytes.end() || merged == idOfBytes.end()) {
      fail("merge \"" + std::string(line) + "\" uses or makes a token missing from " +
           vocabJsonPath);
    }
    // encoder.py's dict(zip(merges, range(...))) would keep the last rank of a repeated pair,
    // silently changing the order of merges: a repeated line means a corrupt file.
    if (!tok.m_merges.emplace(pairKey(l->second, r->second), Merge{rank++, merged->second}).second)
      fail("merge \"" + std::string(line) + "\" is listed twice");
  }
  // Tokens beyond the 256 bytes can only be made by merges: without any, they are unreachable.
  if (rank == 0 && count > 256) {
    throw Error(ErrorKind::Format, mergesPath + " has no merges, but " + vocabJsonPath + " has " +
                                       std::to_string(count) + " tokens");
  }

  tok.m_labels.reserve(count);
  for (const std::string& raw : tok.m_tokenBytes) tok.m_labels.push_back(readableLabel(raw));
  return tok;
}

template <typename Visit>
void BpeTokenizer::forEachPiece(const std::string& text, Visit&& visit) const {
  const std::vector<ByteRange> pieces = splitGpt2Pieces(text);
  // Text repeats its words, so each distinct piece is merged once per call. The cache lives for
  // the call only: its string_view keys point into `text`, there is nothing to lock, and memory
  // does not grow with everything ever encoded.
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> cache;  // -> [first, count)
  cache.reserve(pieces.size() / 4 + 16);
  std::vector<int32_t> cachedIds;
  MergeScratch scratch;
  for (const ByteRange& piece : pieces) {
    const std::string_view bytes(text.data() + piece.begin, piece.end - piece.begin);
    auto [it, inserted] = cache.try_emplace(bytes);
    if (inserted) {
      const auto first = static_cast<uint32_t>(cachedIds.size());
      mergePiece(bytes, m_byteIds, m_merges, scratch, cachedIds);
      it->second = {first, static_cast<uint32_t>(cachedIds.size()) - first};
    }
    visit(piece.begin, cachedIds.data() + it->second.first, it->second.second);
  }
}

std::vector<Token> BpeTokenizer::encode(const std::string& text) const {
  std::vector<Token> tokens;
  tokens.reserve(text.size() / 3 + 1);
  forEachPiece(text, [&](std::size_t begin, const int32_t* ids, uint32_t count) {
    for (uint32_t k = 0; k < count; ++k) {
      Token t;
      t.id = ids[k];
      t.text = m_tokenBytes[ids[k]];
      t.label = m_labels[ids[k]];
      t.byteBegin = begin;
      t.byteEnd = begin + t.text.size();
      begin = t.byteEnd;
      tokens.push_back(std::move(t));
    }
  });
  return tokens;
}

std::vector<int64_t> BpeTokenizer::encodeIds(const std::string& text) const {
  std::vector<int64_t> out;
  out.reserve(text.size() / 3 + 1);
  forEachPiece(text, [&](std::size_t, const int32_t* ids, uint32_t count) {
    out.insert(out.end(), ids, ids + count);
  });
  return out;
}

void BpeTokenizer::checkId(int64_t id) const {
  if (id < 0 || id >= static_cast<int64_t>(m_tokenBytes.size())) {
    throw Error(ErrorKind::InvalidArgument, "token id " + std::to_string(id) +
                                                " is outside the vocabulary (0.." +
                                                std::to_string(m_tokenBytes.size() - 1) + ")");
  }
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (const int64_t id : ids) {
    checkId(id);
    out += m_tokenBytes[static_cast<std::size_t>(id)];
  }
  return out;
}

std::string BpeTokenizer::tokenBytes(int64_t id) const {
  checkId(id);
  return m_tokenBytes[static_cast<std::size_t>(id)];
}

}  // namespace attnscope
