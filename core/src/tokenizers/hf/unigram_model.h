// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizers/hf/components.h"

namespace attnscope::hf {

/// Hugging Face's Unigram model (SentencePiece's): the segmentation of a piece with the highest
/// sum of scores (Viterbi, HF's encode_optimized). A character no entry covers is the unk token
/// at min_score - 10; consecutive unks are fused into one token whose value is the text it
/// covers, as in HF. With byte_fallback an unknown run becomes "<0xNN>" tokens, one per byte,
/// each with the offsets of the whole run.
class UnigramModel : public Model {
 public:
  UnigramModel(std::vector<std::pair<std::string, double>> vocab, std::optional<std::size_t> unkId,
               bool byteFallback);
  /// From the "model" object of a tokenizer.json.
  static std::unique_ptr<UnigramModel> fromJson(const nlohmann::json& json);

  std::vector<ModelToken> tokenize(std::string_view piece) const override;
  std::optional<int64_t> tokenToId(std::string_view token) const override;
  std::string idToToken(int64_t id) const override;
  std::size_t vocabSize() const override { return m_pieces.size(); }

 private:
  // A byte trie over the vocabulary; a node's children are a contiguous run of edges sorted by
  // label (the root's are also in a direct table).
  struct TrieNode {
    int64_t piece = -1;  // id of the entry ending here (HF: the last entry with that text)
    uint32_t edgeBegin = 0;
    uint32_t edgeCount = 0;
  };
  void buildTrie();
  int64_t child(uint32_t node, unsigned char label) const;
  const uint32_t* findId(std::string_view token) const;
  std::vector<ModelToken> encode(std::string_view piece) const;
  [[noreturn]] void missingUnk(std::string_view piece) const;

  std::vector<std::string> m_pieces;
  std::vector<double> m_scores;
  std::unordered_map<std::string_view, uint32_t> m_ids;  // keys point into m_pieces
  std::optional<std::size_t> m_unkId;
  bool m_byteFallback = false;
  double m_minScore = 0;
  std::array<int64_t, 256> m_byteIds{};  // id of "<0xNN>", -1 when absent

  std::vector<TrieNode> m_nodes;
  std::vector<unsigned char> m_edgeLabels;
  std::vector<uint32_t> m_edgeChildren;
  std::array<int64_t, 256> m_rootChildren{};

  static constexpr std::size_t kCacheCapacity = 10000;
  static constexpr std::size_t kCacheMaxLength = 256;
  mutable std::shared_mutex m_cacheMutex;
  mutable std::deque<std::string> m_cacheKeys;
  mutable std::unordered_map<std::string_view, std::vector<ModelToken>> m_cache;
};

}  // namespace attnscope::hf
