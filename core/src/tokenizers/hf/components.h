// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizers/hf/normalized_string.h"

// The stages of Hugging Face tokenizers' pipeline, read from a tokenizer.json:
// added tokens -> normalizer -> pre-tokenizer -> model -> post-processor, and a decoder for labels.
// Each stage's factory throws Error(Format) naming the component and the reason
// ('pre_tokenizer.type "Foo" is not supported').
namespace attnscope::hf {

/// A piece of the input on its way through the pipeline. Added tokens found in the text are
/// pieces already decided (addedId >= 0); the pre-tokenizer and the model leave them alone.
struct Split {
  NormalizedString text;
  int64_t addedId = -1;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(NormalizedString& s) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  /// Splits every piece that is not an added token further; order is kept.
  virtual void preTokenize(std::vector<Split>& splits) const = 0;
};

/// One token the model made from a pre-tokenized piece, with the normalized bytes it covers.
struct ModelToken {
  int64_t id = 0;
  std::string value;      // the vocabulary entry ("Ġthe", "##ing", "<0xE2>")
  std::size_t begin = 0;  // [begin, end): normalized bytes of the piece
  std::size_t end = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  /// piece: the normalized text of one pre-tokenized piece -> its tokens, left to right.
  virtual std::vector<ModelToken> tokenize(std::string_view piece) const = 0;
  virtual std::optional<int64_t> tokenToId(std::string_view token) const = 0;
  /// The vocabulary entry of an id; empty for an id outside the vocabulary.
  virtual std::string idToToken(int64_t id) const = 0;
  /// One more than the largest id.
  virtual std::size_t vocabSize() const = 0;
};

/// A token of the final encoding.
struct EncodedToken {
  int64_t id = 0;
  std::string value;
  Span offsets;          // bytes of the original text of its sequence; [0, 0) for inserted specials
  uint32_t typeId = 0;   // segment: 0 for the first text, 1 for the pair
  bool special = false;  // inserted by the post-processor, or an added token marked special
  int sequence = 0;      // which input it came from: 0, 1, or -1 for inserted special tokens
};

/// One encoded sequence per input: one, or two for a sentence pair.
using Encodings = std::vector<std::vector<EncodedToken>>;

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  /// The tokens of the first text (and of the pair) -> with special tokens where the processor
  /// puts them, type ids and trimmed offsets. The caller concatenates what comes out
  /// (Hugging Face's process_encodings, then Encoding::merge).
  virtual Encodings process(Encodings encodings) const = 0;
};

/// Turns vocabulary strings back into the bytes they stand for, one token at a time, for labels
/// ("Ġthe" -> " the", "▁w" -> " w", "##ing" -> "ing", "<0xE2>" -> byte E2). Decoders that act on
/// the whole sequence (Fuse, Strip) change nothing here: a label belongs to one token.
class Decoder {
 public:
  virtual ~Decoder() = default;
  /// token: the vocabulary string; first: whether it is the first token of the text.
  virtual std::string decodeToken(const std::string& token, bool first) const = 0;
};

/// Factories; `json` is the component's object from tokenizer.json (never null here).
std::unique_ptr<Normalizer> makeNormalizer(const nlohmann::json& json);
std::unique_ptr<PreTokenizer> makePreTokenizer(const nlohmann::json& json);
std::unique_ptr<Model> makeModel(const nlohmann::json& json);
std::unique_ptr<PostProcessor> makePostProcessor(const nlohmann::json& json);
std::unique_ptr<Decoder> makeDecoder(const nlohmann::json& json);

/// Throws Error(Format) "<component>: <what>".
[[noreturn]] void componentError(const std::string& component, const std::string& what);
/// j[key] as a bool, `fallback` where it is absent or null; anything else is a componentError.
bool boolField(const nlohmann::json& j, const char* key, bool fallback,
               const std::string& component);
/// The component's "type", checked to be a string.
std::string componentType(const nlohmann::json& json, const std::string& component);

/// How many Sequence components may nest inside each other. Each level is one recursive call of
/// a factory (and of normalize / preTokenize later): 50,000 levels overflowed the stack, while
/// real files nest one or two.
constexpr int kMaxSequenceNesting = 32;

/// Held by a factory while it builds a Sequence's parts: counts the nesting on this thread and
/// throws componentError past kMaxSequenceNesting.
class SequenceNesting final {
 public:
  explicit SequenceNesting(const std::string& component);
  ~SequenceNesting();
  SequenceNesting(const SequenceNesting&) = delete;
  SequenceNesting& operator=(const SequenceNesting&) = delete;
};

}  // namespace attnscope::hf
