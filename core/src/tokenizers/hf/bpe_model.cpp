// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/hf/bpe_model.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <utility>

#include "attnscope/error.h"

namespace attnscope::hf {

namespace {

uint64_t pairKey(uint32_t left, uint32_t right) {
  return (static_cast<uint64_t>(left) << 32) | right;
}

std::string byteToken(unsigned b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

// The merge queue: HF's min-heap of Merge{rank, pos}, here as one 64-bit key per entry,
// rank << 32 | pos, so entries compare as integers (rank first, ties by position); the merged
// id comes from the rank. A 4-ary heap, like HF's QuaternaryHeap.
class MergeQueue {
 public:
  void clear() { m_heap.clear(); }
  bool empty() const { return m_heap.empty(); }
  void pushUnordered(uint64_t key) { m_heap.push_back(key); }
  void heapify() {
    if (m_heap.size() < 2) return;
    for (std::size_t i = (m_heap.size() - 2) / 4 + 1; i-- > 0;) siftDown(i, m_heap[i]);
  }
  void push(uint64_t key) {
    std::size_t i = m_heap.size();
    m_heap.push_back(key);
    while (i > 0) {
      const std::size_t parent = (i - 1) / 4;
      if (m_heap[parent] <= key) break;
      m_heap[i] = m_heap[parent];
      i = parent;
    }
    m_heap[i] = key;
  }
  uint64_t pop() {
    const uint64_t top = m_heap[0];
    const uint64_t last = m_heap.back();
    m_heap.pop_back();
    if (!m_heap.empty()) siftDown(0, last);
    return top;
  }

 private:
  void siftDown(std::size_t i, uint64_t key) {
    const std::size_t n = m_heap.size();
    for (;;) {
      const std::size_t first = 4 * i + 1;
      if (first >= n) break;
      std::size_t best = first;
      const std::size_t end = std::min(first + 4, n);
      for (std::size_t c = first + 1; c < end; ++c) {
        if (m_heap[c] < m_heap[best]) best = c;
      }
      if (m_heap[best] >= key) break;
      m_heap[i] = m_heap[best];
      i = best;
    }
    m_heap[i] = key;
  }
  std::vector<uint64_t> m_heap;
};

uint64_t queueKey(uint32_t rank, std::size_t pos) {
  return (static_cast<uint64_t>(rank) << 32) | static_cast<uint32_t>(pos);
}

std::optional<std::string> optionalString(const nlohmann::json& json, const char* field) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) componentError("model", std::string(field) + " must be a string or null");
  return it->get<std::string>();
}

bool optionalBool(const nlohmann::json& json, const char* field) {
  auto it = json.find(field);
  if (it == json.end() || it->is_null()) return false;
  if (!it->is_boolean()) componentError("model", std::string(field) + " must be a boolean");
  return it->get<bool>();
}

}  // namespace

// ---- MergeMap -----------------------------------------------------------------------------------

void BpeModel::MergeMap::reserve(std::size_t n) {
  std::size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  m_slots.assign(cap, Slot{0, MergeValue{0, 0}, false});
  m_mask = cap - 1;
  m_size = 0;
}

std::size_t BpeModel::MergeMap::slot(uint64_t key) const {
  uint64_t h = key * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  return static_cast<std::size_t>(h) & m_mask;
}

void BpeModel::MergeMap::insertOrAssign(uint64_t key, MergeValue value) {
  if ((m_size + 1) * 2 > m_slots.size()) {
    std::vector<Slot> old = std::move(m_slots);
    reserve(old.size());  // doubles: reserve(n) makes at least 2n slots
    for (const Slot& s : old)
      if (s.used) insertOrAssign(s.key, s.value);
  }
  for (std::size_t i = slot(key);; i = (i + 1) & m_mask) {
    Slot& s = m_slots[i];
    if (!s.used) {
      s = Slot{key, value, true};
      ++m_size;
      return;
    }
    if (s.key == key) {
      s.value = value;
      return;
    }
  }
}

const BpeModel::MergeValue* BpeModel::MergeMap::find(uint64_t key) const {
  if (m_slots.empty()) return nullptr;
  for (std::size_t i = slot(key);; i = (i + 1) & m_mask) {
    const Slot& s = m_slots[i];
    if (!s.used) return nullptr;
    if (s.key == key) return &s.value;
  }
}

// ---- construction -------------------------------------------------------------------------------

BpeModel::BpeModel(std::vector<std::pair<std::string, uint32_t>> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, Options options)
    : m_opt(std::move(options)) {
  m_vocab = Vocabulary(std::move(vocab));

  for (unsigned b = 0; b < 256; ++b) {
    const uint32_t* id = m_vocab.find(byteToken(b));
    m_byteIds[b] = id ? int64_t{*id} : -1;
  }
  if (m_opt.unkToken) {
    if (const uint32_t* id = m_vocab.find(*m_opt.unkToken)) m_unkId = *id;
  }

  // HF builds each merged token as a + b without b's first prefix-length bytes.
  const std::size_t prefixLen =
      m_opt.continuingSubwordPrefix ? m_opt.continuingSubwordPrefix->size() : 0;
  if (merges.size() > 0xFFFFFFFFull) componentError("model", "merges: more than 2^32 entries");
  m_merges.reserve(merges.size());
  m_rankNewId.assign(merges.size(), 0);
  std::string merged;
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const std::string where = "merges[" + std::to_string(rank) + "]: ";
    const uint32_t* aId = m_vocab.find(a);
    if (!aId) componentError("model", where + "token \"" + a + "\" is not in the vocabulary");
    const uint32_t* bId = m_vocab.find(b);
    if (!bId) componentError("model", where + "token \"" + b + "\" is not in the vocabulary");
    if (b.size() < prefixLen) {
      componentError("model", where + "token \"" + b +
                                  "\" is shorter than continuing_subword_prefix \"" +
                                  *m_opt.continuingSubwordPrefix + "\"");
    }
    merged.assign(a);
    merged.append(b, prefixLen, std::string::npos);
    const uint32_t* newId = m_vocab.find(merged);
    if (!newId) {
      componentError("model", where + "merged token \"" + merged + "\" is not in the vocabulary");
    }
    m_merges.insertOrAssign(pairKey(*aId, *bId), MergeValue{static_cast<uint32_t>(rank), *newId});
    m_rankNewId[rank] = *newId;
  }
}

std::unique_ptr<BpeModel> BpeModel::fromJson(const nlohmann::json& json) {
  if (!json.is_object()) componentError("model", "a BPE model must be an object");
  auto mit = json.find("merges");
  if (mit == json.end()) componentError("model", "merges is missing");

  Vocabulary::Entries vocab = Vocabulary::parseJson(json);

  if (!mit->is_array()) componentError("model", "merges must be an array");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(mit->size());
  const bool legacy = !mit->empty() && mit->front().is_string();
  std::size_t index = 0;
  for (const nlohmann::json& m : *mit) {
    const std::string where = "merges[" + std::to_string(index++) + "]";
    if (legacy) {
      if (!m.is_string()) {
        componentError("model", where + " must be a string like the other merges (\"a b\")");
      }
      const std::string& line = m.get_ref<const std::string&>();
      if (line.rfind("#version", 0) == 0) continue;  // HF skips a merges.txt header
      const std::size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        componentError("model",
                       where + " \"" + line + "\" must be two tokens separated by one space");
      }
      merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    } else {
      if (!m.is_array() || m.size() != 2 || !m[0].is_string() || !m[1].is_string()) {
        componentError("model", where + " must be a pair of strings [\"a\", \"b\"]");
      }
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    }
  }

  Options opt;
  opt.unkToken = optionalString(json, "unk_token");
  opt.continuingSubwordPrefix = optionalString(json, "continuing_subword_prefix");
  opt.endOfWordSuffix = optionalString(json, "end_of_word_suffix");
  opt.fuseUnk = optionalBool(json, "fuse_unk");
  opt.byteFallback = optionalBool(json, "byte_fallback");
  opt.ignoreMerges = optionalBool(json, "ignore_merges");
  auto dit = json.find("dropout");
  if (dit != json.end() && !dit->is_null() && !dit->is_number()) {
    componentError("model", "dropout must be a number or null");
  }
  return std::make_unique<BpeModel>(std::move(vocab), merges, std::move(opt));
}

// ---- lookups ------------------------------------------------------------------------------------

std::optional<int64_t> BpeModel::tokenToId(std::string_view token) const {
  return m_vocab.tokenToId(token);
}

std::string BpeModel::idToToken(int64_t id) const { return m_vocab.idToToken(id); }

void BpeModel::missingUnk(std::string_view piece) const {
  throw Error(ErrorKind::InvalidArgument, "model: unk_token \"" + *m_opt.unkToken +
                                              "\" is needed for \"" + std::string(piece) +
                                              "\" but is not in the vocabulary");
}

// ---- tokenization -------------------------------------------------------------------------------

// HF's BPE::merge_word followed by Word::merge_all (without dropout). Long (~115 lines) on
// purpose: it follows HF's two functions statement by statement, so they can be compared side by
// side, and it is the tokenizer's inner loop (one call per word).
void BpeModel::mergeWord(std::string_view w, Word& out) const {
  thread_local std::vector<Symbol> symbols;
  thread_local MergeQueue queue;
  thread_local std::string buffer;
  symbols.clear();
  symbols.reserve(w.size());

  auto add = [](uint32_t id, uint32_t len) {
    const int32_t n = static_cast<int32_t>(symbols.size());
    if (n > 0) symbols.back().next = n;
    symbols.push_back(Symbol{id, n - 1, -1, len});
  };

  const std::string* prefix =
      m_opt.continuingSubwordPrefix ? &*m_opt.continuingSubwordPrefix : nullptr;
  const std::string* suffix = m_opt.endOfWordSuffix ? &*m_opt.endOfWordSuffix : nullptr;
  bool pendingUnk = false;
  uint32_t unkId = 0;
  uint32_t unkLen = 0;
  for (std::size_t i = 0; i < w.size();) {
    std::size_t len = utf8Length(static_cast<unsigned char>(w[i]));
    if (i + len > w.size()) len = w.size() - i;
    const bool isFirst = i == 0;
    const bool isLast = i + len >= w.size();
    std::string_view s = w.substr(i, len);
    i += len;
    const bool withPrefix = !isFirst && prefix;
    const bool withSuffix = isLast && suffix;
    if (withPrefix || withSuffix) {
      buffer.clear();
      if (withPrefix) buffer += *prefix;
      buffer.append(s.data(), s.size());
      if (withSuffix) buffer += *suffix;
      s = buffer;
    }
    const uint32_t byteLen = static_cast<uint32_t>(len);

    if (const uint32_t* id = m_vocab.find(s)) {
      if (pendingUnk) {
        add(unkId, unkLen);
        pendingUnk = false;
      }
      add(*id, byteLen);
      continue;
    }
    if (m_opt.byteFallback) {
      bool all = true;
      for (char c : s) all = all && m_byteIds[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        // HF: one symbol of length 1 per byte of s (prefix and suffix included), and a
        // pending unk is not flushed first.
        for (char c : s) add(static_cast<uint32_t>(m_byteIds[static_cast<unsigned char>(c)]), 1);
        continue;
      }
    }
    if (m_opt.unkToken) {
      if (pendingUnk && m_opt.fuseUnk) {
        unkLen += byteLen;
      } else {
        if (pendingUnk) add(unkId, unkLen);
        if (!m_unkId) missingUnk(w);
        unkId = *m_unkId;
        unkLen = byteLen;
        pendingUnk = true;
      }
    }
    // No unk_token: HF drops the character (and its bytes from the offsets that follow).
  }
  if (pendingUnk) add(unkId, unkLen);

  // merge_all: lowest rank first, ties by position.
  queue.clear();
  for (std::size_t k = 0; k + 1 < symbols.size(); ++k) {
    if (const auto* m = m_merges.find(pairKey(symbols[k].id, symbols[k + 1].id))) {
      queue.pushUnordered(queueKey(m->rank, k));
    }
  }
  queue.heapify();
  const int32_t count = static_cast<int32_t>(symbols.size());
  while (!queue.empty()) {
    const uint64_t top = queue.pop();
    const uint32_t pos = static_cast<uint32_t>(top);
    const uint32_t newId = m_rankNewId[static_cast<std::size_t>(top >> 32)];

    Symbol& cur = symbols[pos];
    if (cur.len == 0 || cur.next == -1) continue;
    const int32_t nextPos = cur.next;
    const Symbol right = symbols[static_cast<std::size_t>(nextPos)];
    const auto* m = m_merges.find(pairKey(cur.id, right.id));
    if (!m || m->newId != newId) continue;  // an expired entry (HF compares the merged ids)

    cur.id = newId;
    cur.len += right.len;
    cur.next = right.next;
    symbols[static_cast<std::size_t>(nextPos)].len = 0;
    if (right.next > -1 && right.next < count) {
      symbols[static_cast<std::size_t>(right.next)].prev = static_cast<int32_t>(pos);
    }
    if (cur.prev >= 0) {
      const Symbol& prev = symbols[static_cast<std::size_t>(cur.prev)];
      if (const auto* pm = m_merges.find(pairKey(prev.id, cur.id))) {
        queue.push(queueKey(pm->rank, static_cast<std::size_t>(cur.prev)));
      }
    }
    if (cur.next >= 0 && cur.next < count) {
      const Symbol& next = symbols[static_cast<std::size_t>(cur.next)];
      if (const auto* nm = m_merges.find(pairKey(cur.id, next.id))) {
        queue.push(queueKey(nm->rank, pos));
      }
    }
  }

  out.clear();
  for (const Symbol& s : symbols) {
    if (s.len != 0) out.emplace_back(s.id, s.len);
  }
}

void BpeModel::appendTokens(const Word& word, std::size_t pieceSize,
                            std::vector<ModelToken>& out) const {
  out.reserve(out.size() + word.size());
  std::size_t pos = 0;
  for (const auto& [id, len] : word) {
    ModelToken t;
    t.id = id;
    t.value = m_vocab.token(id);
    // Offsets are running sums of the symbol lengths, as in HF; clamped to the piece (they can
    // only pass its end for byte-fallback tokens of a prefixed or suffixed character).
    t.begin = std::min(pos, pieceSize);
    pos += len;
    t.end = std::min(pos, pieceSize);
    out.push_back(std::move(t));
  }
}

std::vector<ModelToken> BpeModel::tokenize(std::string_view piece) const {
  std::vector<ModelToken> out;
  if (piece.empty()) return out;
  if (m_opt.ignoreMerges) {
    if (const uint32_t* id = m_vocab.find(piece)) {
      out.push_back(ModelToken{*id, std::string(piece), 0, piece.size()});
      return out;
    }
  }
  const bool cacheable = piece.size() < kCacheMaxLength;
  if (cacheable) {
    std::shared_lock<std::shared_mutex> lock(m_cacheMutex);
    auto it = m_cache.find(piece);
    if (it != m_cache.end()) {
      appendTokens(it->second, piece.size(), out);
      return out;
    }
  }
  Word word;
  mergeWord(piece, word);
  appendTokens(word, piece.size(), out);
  if (cacheable) {
    std::unique_lock<std::shared_mutex> lock(m_cacheMutex);
    if (m_cache.size() < kCacheCapacity && m_cache.find(piece) == m_cache.end()) {
      m_cacheKeys.emplace_back(piece);
      m_cache.emplace(std::string_view(m_cacheKeys.back()), std::move(word));
    }
  }
  return out;
}

}  // namespace attnscope::hf
