// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/hf/unigram_model.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <mutex>

#include "attnscope/error.h"

namespace attnscope::hf {

namespace {

constexpr double kUnkPenalty = 10.0;  // HF's K_UNK_PENALTY

std::string byteToken(unsigned b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

}  // namespace

UnigramModel::UnigramModel(std::vector<std::pair<std::string, double>> vocab,
                           std::optional<std::size_t> unkId, bool byteFallback)
    : m_unkId(unkId), m_byteFallback(byteFallback) {
  if (unkId) {
    if (vocab.empty()) componentError("model", "vocab is empty but unk_id is set");
    if (*unkId >= vocab.size()) {
      componentError("model", "unk_id " + std::to_string(*unkId) +
                                  " is outside the vocabulary of " + std::to_string(vocab.size()) +
                                  " entries");
    }
  }
  m_pieces.reserve(vocab.size());
  m_scores.reserve(vocab.size());
  m_minScore = std::numeric_limits<double>::infinity();
  for (auto& [piece, score] : vocab) {
    m_pieces.push_back(std::move(piece));
    m_scores.push_back(score);
    if (score < m_minScore) m_minScore = score;
  }
  m_ids.reserve(m_pieces.size());
  for (std::size_t id = 0; id < m_pieces.size(); ++id) {
    m_ids[std::string_view(m_pieces[id])] = static_cast<uint32_t>(id);  // the last one wins
  }
  for (unsigned b = 0; b < 256; ++b) {
    const uint32_t* id = findId(byteToken(b));
    m_byteIds[b] = id ? int64_t{*id} : -1;
  }
  buildTrie();
}

void UnigramModel::buildTrie() {
  // The distinct non-empty entries, sorted bytewise, each with its id.
  std::vector<std::pair<std::string_view, uint32_t>> entries;
  entries.reserve(m_ids.size());
  for (const auto& [text, id] : m_ids) {
    if (!text.empty()) entries.emplace_back(text, id);
  }
  std::sort(entries.begin(), entries.end());

  m_nodes.assign(1, TrieNode{});
  m_edgeLabels.clear();
  m_edgeChildren.clear();
  struct Work {
    uint32_t node;
    std::size_t lo, hi, depth;
  };
  std::vector<Work> work{{0, 0, entries.size(), 0}};
  for (std::size_t w = 0; w < work.size(); ++w) {
    auto [node, lo, hi, depth] = work[w];
    if (lo < hi && entries[lo].first.size() == depth) {
      m_nodes[node].piece = entries[lo].second;
      ++lo;
    }
    m_nodes[node].edgeBegin = static_cast<uint32_t>(m_edgeLabels.size());
    for (std::size_t g = lo; g < hi;) {
      const unsigned char label = static_cast<unsigned char>(entries[g].first[depth]);
      std::size_t gEnd = g + 1;
      while (gEnd < hi && static_cast<unsigned char>(entries[gEnd].first[depth]) == label) ++gEnd;
      const uint32_t childIndex = static_cast<uint32_t>(m_nodes.size());
      m_nodes.push_back(TrieNode{});
      m_edgeLabels.push_back(label);
      m_edgeChildren.push_back(childIndex);
      work.push_back(Work{childIndex, g, gEnd, depth + 1});
      g = gEnd;
    }
    m_nodes[node].edgeCount = static_cast<uint32_t>(m_edgeLabels.size()) - m_nodes[node].edgeBegin;
  }
  m_rootChildren.fill(-1);
  const TrieNode& root = m_nodes[0];
  for (uint32_t e = root.edgeBegin; e < root.edgeBegin + root.edgeCount; ++e) {
    m_rootChildren[m_edgeLabels[e]] = m_edgeChildren[e];
  }
}

int64_t UnigramModel::child(uint32_t node, unsigned char label) const {
  if (node == 0) return m_rootChildren[label];
  const TrieNode& n = m_nodes[node];
  const unsigned char* begin = m_edgeLabels.data() + n.edgeBegin;
  const unsigned char* end = begin + n.edgeCount;
  const unsigned char* it =
      n.edgeCount <= 8 ? std::find(begin, end, label) : std::lower_bound(begin, end, label);
  if (it == end || *it != label) return -1;
  return m_edgeChildren[n.edgeBegin + static_cast<uint32_t>(it - begin)];
}

std::unique_ptr<UnigramModel> UnigramModel::fromJson(const nlohmann::json& json) {
  if (!json.is_object()) componentError("model", "a Unigram model must be an object");
  auto vit = json.find("vocab");
  if (vit == json.end()) componentError("model", "vocab is missing");
  if (!vit->is_array()) componentError("model", "vocab must be an array of [piece, score]");
  std::vector<std::pair<std::string, double>> vocab;
  vocab.reserve(vit->size());
  std::size_t index = 0;
  for (const nlohmann::json& e : *vit) {
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number()) {
      componentError("model", "vocab[" + std::to_string(index) + "] must be [piece, score]");
    }
    vocab.emplace_back(e[0].get<std::string>(), e[1].get<double>());
    ++index;
  }
  std::optional<std::size_t> unkId;
  auto uit = json.find("unk_id");
  if (uit != json.end() && !uit->is_null()) {
    if (!uit->is_number_integer() || uit->get<int64_t>() < 0)
      componentError("model", "unk_id must be a non-negative integer or null");
    unkId = uit->get<std::size_t>();
  }
  bool byteFallback = false;
  auto bit = json.find("byte_fallback");
  if (bit != json.end() && !bit->is_null()) {
    if (!bit->is_boolean()) componentError("model", "byte_fallback must be a boolean");
    byteFallback = bit->get<bool>();
  }
  return std::make_unique<UnigramModel>(std::move(vocab), unkId, byteFallback);
}

const uint32_t* UnigramModel::findId(std::string_view token) const {
  auto it = m_ids.find(token);
  return it == m_ids.end() ? nullptr : &it->second;
}

std::optional<int64_t> UnigramModel::tokenToId(std::string_view token) const {
  const uint32_t* id = findId(token);
  if (!id) return std::nullopt;
  return int64_t{*id};
}

std::string UnigramModel::idToToken(int64_t id) const {
  if (id < 0 || static_cast<uint64_t>(id) >= m_pieces.size()) return {};
  return m_pieces[static_cast<std::size_t>(id)];
}

void UnigramModel::missingUnk(std::string_view piece) const {
  throw Error(ErrorKind::InvalidArgument, "model: \"" + std::string(piece) +
                                              "\" has a character no vocabulary entry covers "
                                              "and unk_id is null");
}

// HF's Unigram::encode_optimized followed by Unigram::tokenize. Long (~90 lines) on purpose: it
// follows HF's two functions statement by statement, so they can be compared side by side.
std::vector<ModelToken> UnigramModel::encode(std::string_view s) const {
  struct BestPath {
    double score;
    int64_t startsAt;  // -1: no path ends here yet
    std::size_t id;
  };
  thread_local std::vector<BestPath> best;
  const std::size_t size = s.size();
  best.assign(size + 1, BestPath{0.0, -1, 0});
  const double unkScore = m_minScore - kUnkPenalty;

  for (std::size_t startsAt = 0; startsAt < size;) {
    const double tillHere = best[startsAt].score;
    std::size_t mblen = utf8Length(static_cast<unsigned char>(s[startsAt]));
    if (startsAt + mblen > size) mblen = size - startsAt;
    bool hasSingleNode = false;
    uint32_t node = 0;
    for (std::size_t k = startsAt; k < size; ++k) {
      const int64_t next = child(node, static_cast<unsigned char>(s[k]));
      if (next < 0) break;
      node = static_cast<uint32_t>(next);
      const int64_t id = m_nodes[node].piece;
      if (id < 0) continue;
      const std::size_t keyPos = k + 1;
      BestPath& target = best[keyPos];
      const double candidate = m_scores[static_cast<std::size_t>(id)] + tillHere;
      if (target.startsAt < 0 || candidate > target.score) {
        target.score = candidate;
        target.startsAt = static_cast<int64_t>(startsAt);
        target.id = static_cast<std::size_t>(id);
      }
      if (keyPos - startsAt == mblen) hasSingleNode = true;
    }
    if (!hasSingleNode) {
      BestPath& target = best[startsAt + mblen];
      const double candidate = unkScore + tillHere;
      if (target.startsAt < 0 || candidate > target.score) {
        if (!m_unkId) missingUnk(s);
        target.score = candidate;
        target.startsAt = static_cast<int64_t>(startsAt);
        target.id = *m_unkId;
      }
    }
    startsAt += mblen;
  }

  // Back from the end: the pieces of the best path, consecutive unks fused (HF's fuse_unk).
  thread_local std::vector<std::pair<std::size_t, std::size_t>> ranges;
  ranges.clear();
  std::size_t endsAt = size;
  bool inUnk = false;
  while (endsAt > 0) {
    const BestPath& node = best[endsAt];
    const std::size_t startsAt = static_cast<std::size_t>(node.startsAt);
    const bool isUnk = m_unkId && node.id == *m_unkId;
    if (isUnk && inUnk) {
      ranges.back().first = startsAt;
    } else {
      ranges.emplace_back(startsAt, endsAt);
    }
    inUnk = isUnk;
    endsAt = startsAt;
  }
  std::reverse(ranges.begin(), ranges.end());

  std::vector<ModelToken> out;
  out.reserve(ranges.size());
  for (const auto& [begin, end] : ranges) {
    const std::string_view text = s.substr(begin, end - begin);
    if (const uint32_t* id = findId(text)) {
      out.push_back(ModelToken{*id, std::string(text), begin, end});
      continue;
    }
    if (m_byteFallback) {
      bool all = true;
      for (char c : text) all = all && m_byteIds[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (char c : text) {
          const int64_t id = m_byteIds[static_cast<unsigned char>(c)];
          out.push_back(ModelToken{id, m_pieces[static_cast<std::size_t>(id)], begin, end});
        }
        continue;
      }
    }
    if (!m_unkId) missingUnk(s);
    // HF keeps the covered text as the token's value, with the unk id.
    out.push_back(ModelToken{static_cast<int64_t>(*m_unkId), std::string(text), begin, end});
  }
  return out;
}

std::vector<ModelToken> UnigramModel::tokenize(std::string_view piece) const {
  if (piece.empty()) return {};
  const bool cacheable = piece.size() < kCacheMaxLength;
  if (cacheable) {
    std::shared_lock<std::shared_mutex> lock(m_cacheMutex);
    auto it = m_cache.find(piece);
    if (it != m_cache.end()) return it->second;
  }
  std::vector<ModelToken> out = encode(piece);
  if (cacheable) {
    std::unique_lock<std::shared_mutex> lock(m_cacheMutex);
    if (m_cache.size() < kCacheCapacity && m_cache.find(piece) == m_cache.end()) {
      m_cacheKeys.emplace_back(piece);
      m_cache.emplace(std::string_view(m_cacheKeys.back()), out);
    }
  }
  return out;
}

}  // namespace attnscope::hf
