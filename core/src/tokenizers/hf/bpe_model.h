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
#include <vector>

#include "tokenizers/hf/components.h"
#include "tokenizers/hf/vocabulary.h"

namespace attnscope::hf {

/// Hugging Face's BPE model: a word is split into characters (the continuing-subword prefix on
/// all but the first, the end-of-word suffix on the last), unknown characters become byte tokens
/// (byte_fallback) or the unk token (fused when fuse_unk), then merges are applied lowest rank
/// first. Dropout is ignored (always deterministic). Results of short pieces are cached.
class BpeModel : public Model {
 public:
  struct Options {
    std::optional<std::string> unkToken;
    std::optional<std::string> continuingSubwordPrefix;
    std::optional<std::string> endOfWordSuffix;
    bool fuseUnk = false;
    bool byteFallback = false;
    bool ignoreMerges = false;
  };

  /// vocab: token -> id; merges: pairs in rank order. Throws Error(Format) for a merge whose
  /// tokens (or their concatenation) are not in the vocabulary.
  BpeModel(std::vector<std::pair<std::string, uint32_t>> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, Options options);
  /// From the "model" object of a tokenizer.json.
  static std::unique_ptr<BpeModel> fromJson(const nlohmann::json& json);

  std::vector<ModelToken> tokenize(std::string_view piece) const override;
  std::optional<int64_t> tokenToId(std::string_view token) const override;
  std::string idToToken(int64_t id) const override;
  std::size_t vocabSize() const override { return m_vocab.size(); }

 private:
  struct Symbol {
    uint32_t id;
    int32_t prev;
    int32_t next;
    uint32_t len;  // bytes; 0 marks a symbol merged into its left neighbour
  };
  /// (id, byte length) of each final symbol, HF's Word.
  using Word = std::vector<std::pair<uint32_t, uint32_t>>;

  /// Open-addressing map (left id, right id) -> (rank, merged id).
  struct MergeValue {
    uint32_t rank;
    uint32_t newId;
  };
  class MergeMap {
   public:
    void reserve(std::size_t n);
    void insertOrAssign(uint64_t key, MergeValue value);
    const MergeValue* find(uint64_t key) const;

   private:
    struct Slot {
      uint64_t key;
      MergeValue value;
      bool used;
    };
    std::size_t slot(uint64_t key) const;
    std::vector<Slot> m_slots;
    std::size_t m_mask = 0;
    std::size_t m_size = 0;
  };

  void mergeWord(std::string_view piece, Word& out) const;
  void appendTokens(const Word& word, std::size_t pieceSize, std::vector<ModelToken>& out) const;
  [[noreturn]] void missingUnk(std::string_view piece) const;

  Vocabulary m_vocab;
  MergeMap m_merges;
  std::vector<uint32_t> m_rankNewId;  // the merged id of each rank
  Options m_opt;
  std::array<int64_t, 256> m_byteIds{};  // id of "<0xNN>", -1 when absent
  std::optional<uint32_t> m_unkId;       // id of the unk token, when it is in the vocabulary

  // Cache: piece -> Word, for pieces shorter than kCacheMaxLength, up to kCacheCapacity entries.
  static constexpr std::size_t kCacheCapacity = 10000;
  static constexpr std::size_t kCacheMaxLength = 256;
  mutable std::shared_mutex m_cacheMutex;
  mutable std::deque<std::string> m_cacheKeys;
  mutable std::unordered_map<std::string_view, Word> m_cache;
};

}  // namespace attnscope::hf
