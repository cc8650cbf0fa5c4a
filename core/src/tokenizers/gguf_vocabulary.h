// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/hf_tokenizer.h"

namespace attnscope {

/// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class GgufTokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,      // <unk>
  Control = 3,      // <s>, <|begin_of_text|>, [CLS]: matched in the text, special
  UserDefined = 4,  // added tokens that are not special (<think>): matched in the text
  Unused = 5,       // padding entries ([PAD151643])
  Byte = 6,         // <0x00> .. <0xFF>: SentencePiece byte fallback
};

/// The tokenizer a GGUF file carries in its metadata, field by field as the file names it. The
/// GGUF reader fills it; tokenizerFromGguf turns it into the Hugging Face pipeline of the model's
/// tokenizer.json. Each comment gives the metadata key; a key the file lacks leaves the field
/// empty / nullopt (never a guessed value: the defaults are llama.cpp's, applied by
/// tokenizerFromGguf and documented there).
struct GgufVocabulary {
  std::string model;  // tokenizer.ggml.model (string): "llama", "gpt2" or "bert"
  std::string pre;    // tokenizer.ggml.pre (string), gpt2 only: "llama-bpe", "qwen2", "gpt-2", ...
  std::vector<std::string> tokens;  // tokenizer.ggml.tokens (array of string), index = id
  std::vector<float> scores;        // tokenizer.ggml.scores (array of float32; int32 converted)
  std::vector<int32_t> tokenTypes;  // tokenizer.ggml.token_type (array of int32, GgufTokenType)
  std::vector<std::string> merges;  // tokenizer.ggml.merges (array of string, "Ġ t"), gpt2 only
  std::optional<int64_t> bosId;     // tokenizer.ggml.bos_token_id (uint32)
  std::optional<int64_t> eosId;     // tokenizer.ggml.eos_token_id
  std::optional<int64_t> unkId;     // tokenizer.ggml.unknown_token_id
  std::optional<int64_t> sepId;   // tokenizer.ggml.seperator_token_id (sic: the format's spelling)
  std::optional<int64_t> padId;   // tokenizer.ggml.padding_token_id
  std::optional<int64_t> clsId;   // tokenizer.ggml.cls_token_id (older bert files)
  std::optional<int64_t> maskId;  // tokenizer.ggml.mask_token_id
  std::optional<bool> addBos;     // tokenizer.ggml.add_bos_token (bool)
  std::optional<bool> addEos;     // tokenizer.ggml.add_eos_token
  std::optional<bool> addSep;     // tokenizer.ggml.add_sep_token
  std::optional<bool> addSpacePrefix;  // tokenizer.ggml.add_space_prefix, llama only
  std::optional<bool> lowercase;       // tokenizer.ggml.normalizer.lowercase, bert only
  std::string source;                  // the file, for messages
};

/// The tokenizer of a GGUF file as the Hugging Face pipeline of the same model's tokenizer.json,
/// so ids, byte spans and labels equal Hugging Face's. Where llama.cpp and Hugging Face differ,
/// this follows Hugging Face: the space prefix goes before every piece between added tokens
/// (legacy Llama tokenizer.json), Qwen's text is NFC-normalized first, and the pre-tokenizer
/// regexes are the tokenizer.json originals (llama.cpp rewrites their case-insensitive groups).
///
/// - "llama" (SentencePiece BPE): the pieces merge by score, highest first. Hugging Face's Llama
///   tokenizer.json is made from the same scores (transformers' SentencePieceExtractor: every
///   split of a piece into two pieces is a merge, ranked by the piece's score, ties by id), so
///   the merges are rebuilt that way; normalizer Prepend("▁") (add_space_prefix, default true)
///   + Replace(" ", "▁"), byte fallback when the vocabulary has <0xNN> pieces, unknown runs fused.
///   Files converted without tokenizer.model carry -1000 for every score: ties then fall back to
///   id order, which is the right order for most pieces but not all (Llama 2's "▁▁").
/// - "gpt2" (byte-level BPE): vocabulary and merges as stored; tokenizer.ggml.pre names the
///   pre-tokenizer, mapped to the Hugging Face one of that model (kSupportedPre in the .cpp):
///   llama-bpe / llama3 / llama-v3 (Llama 3), qwen2, gpt-2, phi-2, smollm, starcoder, and
///   "default" (llama.cpp's own regexes; also used when the key is absent, as llama.cpp does).
///   Any other name is refused by name.
/// - "bert" (WordPiece): the converter's phantom-space vocabulary ("▁word", "piece", "[CLS]") is
///   turned back into "word", "##piece", "[CLS]"; lowercase defaults to true.
///
/// Control and unknown tokens are matched in the text as Hugging Face's special added tokens,
/// user-defined ones as non-special added tokens. add_bos / add_eos / add_sep wrap the text in
/// the bos (cls) / eos / sep tokens; when absent they default as in llama.cpp (llama: bos only;
/// llama-bpe: bos; other gpt2: none; bert: cls + sep).
///
/// Throws Error(Format) "<source>: <what>" naming the key for a malformed vocabulary (no tokens,
/// arrays of the wrong length, a duplicate token, invalid UTF-8, a special id past the
/// vocabulary, add_bos_token without bos_token_id, a merge of unknown tokens) and for an
/// unsupported model or pre-tokenizer, listing what is supported. Cost: about the cost of
/// reading the same model's tokenizer.json (Llama 3's 128,256 tokens: ~0.9 s here, loaded).
HfTokenizer tokenizerFromGguf(const GgufVocabulary& vocabulary);

/// The merges tokenizerFromGguf gives a "llama" vocabulary, in rank order: what Hugging Face's
/// tokenizer.json of the same SentencePiece model lists. Throws as tokenizerFromGguf.
std::vector<std::pair<std::string, std::string>> sentencePieceMerges(
    const GgufVocabulary& vocabulary);

}  // namespace attnscope
