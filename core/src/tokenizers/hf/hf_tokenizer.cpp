// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/hf_tokenizer.h"

#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "attnscope/utf8.h"
#include "io/file_io.h"
#include "io/strict_json.h"
#include "tokenizers/hf/added_vocabulary.h"
#include "tokenizers/hf/components.h"
#include "tokenizers/piece_labels.h"

namespace attnscope {

using hf::EncodedToken;
using hf::Encodings;

struct HfTokenizer::Impl {
  std::string source;
  std::unique_ptr<hf::Normalizer> normalizer;
  std::unique_ptr<hf::PreTokenizer> preTokenizer;
  std::unique_ptr<hf::Model> model;
  std::unique_ptr<hf::PostProcessor> postProcessor;
  std::unique_ptr<hf::Decoder> decoder;
  hf::AddedVocabulary added;
  std::optional<int64_t> unkId;

  /// One text through added tokens, normalizer, pre-tokenizer and model.
  std::vector<EncodedToken> encodeSequence(const std::string& text, int sequence) const {
    std::vector<hf::Split> splits = added.extractAndNormalize(text, normalizer.get());
    if (preTokenizer) preTokenizer->preTokenize(splits);
    std::vector<EncodedToken> out;
    for (const hf::Split& s : splits) {
      if (s.addedId >= 0) {
        const hf::AddedToken* a = added.find(s.addedId);
        EncodedToken t;
        t.id = s.addedId;
        t.value = a ? a->content : s.text.normalized();
        t.offsets = s.text.originalSpan(0, s.text.size());
        t.special = a && a->special;
        t.sequence = sequence;
        t.typeId = static_cast<uint32_t>(sequence);
        out.push_back(std::move(t));
        continue;
      }
      if (s.text.empty()) continue;
      for (hf::ModelToken& m : model->tokenize(s.text.normalized())) {
        EncodedToken t;
        t.id = m.id;
        t.value = std::move(m.value);
        t.offsets = s.text.originalSpan(m.begin, m.end);
        t.sequence = sequence;
        t.typeId = static_cast<uint32_t>(sequence);  // as Hugging Face encodes the pair: type id 1
        out.push_back(std::move(t));
      }
    }
    return out;
  }

  std::vector<EncodedToken> encode(const std::string& text, const std::string* pair) const {
    Encodings e{encodeSequence(text, 0)};
    if (pair) e.push_back(encodeSequence(*pair, 1));
    if (postProcessor) e = postProcessor->process(std::move(e));
    std::vector<EncodedToken> all;
    for (auto& seq : e) {
      for (EncodedToken& t : seq) all.push_back(std::move(t));
    }
    return all;
  }

  /// The bytes a token stands for: the decoder's reading, or the string itself without one.
  std::string bytesOf(const EncodedToken& t, bool first) const {
    if (t.special || !decoder) return t.value;
    return decoder->decodeToken(t.value, first);
  }
};

namespace {

constexpr std::size_t kMaxTokenizerJsonDepth = 128;

std::unique_ptr<hf::Normalizer> optionalNormalizer(const nlohmann::json& j, const char* key) {
  return j.contains(key) && !j[key].is_null() ? hf::makeNormalizer(j[key]) : nullptr;
}

}  // namespace

HfTokenizer::HfTokenizer(std::shared_ptr<const Impl> impl) : m_impl(std::move(impl)) {}

HfTokenizer HfTokenizer::fromFile(const std::string& path) {
  return fromJson(readFile(path, kMaxTokenizerBytes), path);
}

HfTokenizer HfTokenizer::fromJson(const std::string& text, const std::string& source) {
  // Depth-limited: real files nest about six levels, and a hostile one must not reach the
  // recursive component factories or json::dump. Invalid JSON (or UTF-8) is named as such.
  const nlohmann::json j = parseStrictJson(text, source, kMaxTokenizerJsonDepth,
                                           /*invalidIsDiscarded=*/false,
                                           /*allowDuplicateKeys=*/true);
  if (!j.is_object()) throw Error(ErrorKind::Format, source + ": not a JSON object");
  auto impl = std::make_shared<Impl>();
  impl->source = source;
  try {
    if (!j.contains("model") || !j["model"].is_object()) hf::componentError("model", "missing");
    impl->normalizer = optionalNormalizer(j, "normalizer");
    if (j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null()) {
      impl->preTokenizer = hf::makePreTokenizer(j["pre_tokenizer"]);
    }
    impl->model = hf::makeModel(j["model"]);
    if (j.contains("post_processor") && !j["post_processor"].is_null()) {
      impl->postProcessor = hf::makePostProcessor(j["post_processor"]);
    }
    if (j.contains("decoder") && !j["decoder"].is_null())
      impl->decoder = hf::makeDecoder(j["decoder"]);
    impl->added = hf::AddedVocabulary(
        j.contains("added_tokens") ? j["added_tokens"] : nlohmann::json(), impl->normalizer.get());
    const nlohmann::json& m = j["model"];
    if (m.contains("unk_token") && m["unk_token"].is_string()) {
      impl->unkId = impl->model->tokenToId(m["unk_token"].get<std::string>());
    } else if (m.contains("unk_id") && m["unk_id"].is_number_integer()) {
      impl->unkId = m["unk_id"].get<int64_t>();
    }
  } catch (const Error& e) {
    throw Error(ErrorKind::Format, source + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Format, source + ": " + e.what());
  }
  return HfTokenizer(impl);
}

HfEncoding HfTokenizer::encodeIds(const std::string& text, const std::string* pair) const {
  requireValidUtf8(text, "the text");
  if (pair) requireValidUtf8(*pair, "the pair");
  HfEncoding out;
  const std::vector<EncodedToken> tokens = m_impl->encode(text, pair);
  std::vector<std::string> bytes;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    bytes.push_back(m_impl->bytesOf(tokens[i], i == 0));
  out.labels = pieceLabels(bytes);
  for (const EncodedToken& t : tokens) {
    out.ids.push_back(t.id);
    out.tokens.push_back(t.value);
    out.begins.push_back(t.offsets.begin);
    out.ends.push_back(t.offsets.end);
    out.typeIds.push_back(t.typeId);
    out.sequences.push_back(t.sequence);
    out.special.push_back(t.special);
  }
  return out;
}

std::vector<Token> HfTokenizer::encode(const std::string& text) const {
  return tokensOf(text, nullptr);
}

std::vector<Token> HfTokenizer::encodePair(const std::string& text, const std::string& pair) const {
  return tokensOf(text, &pair);
}

std::vector<Token> HfTokenizer::tokensOf(const std::string& text, const std::string* pair) const {
  const HfEncoding e = encodeIds(text, pair);
  std::vector<Token> out;
  for (std::size_t i = 0; i < e.ids.size(); ++i) {
    Token t;
    t.id = e.ids[i];
    t.text = e.special[i] ? e.tokens[i]
                          : (m_impl->decoder ? m_impl->decoder->decodeToken(e.tokens[i], i == 0)
                                             : e.tokens[i]);
    t.label = e.labels[i];
    t.byteBegin = e.begins[i];
    t.byteEnd = e.ends[i];
    t.segment = static_cast<int>(e.typeIds[i]);
    t.special = e.special[i];
    t.unknown = m_impl->unkId && t.id == *m_impl->unkId;
    out.push_back(std::move(t));
  }
  return out;
}

std::size_t HfTokenizer::vocabSize() const {
  std::size_t n = m_impl->model->vocabSize();
  for (const hf::AddedToken& a : m_impl->added.tokens())
    n = std::max(n, static_cast<std::size_t>(a.id) + 1);
  return n;
}

std::optional<int64_t> HfTokenizer::tokenToId(const std::string& token) const {
  if (const hf::AddedToken* a = m_impl->added.find(token)) return a->id;
  return m_impl->model->tokenToId(token);
}

Token HfTokenizer::tokenOf(int64_t id) const {
  Token t;
  t.id = id;
  EncodedToken e;
  e.id = id;
  if (const hf::AddedToken* a = m_impl->added.find(id)) {
    e.value = a->content;
    e.special = a->special;
  } else {
    e.value = m_impl->model->idToToken(id);
  }
  if (e.value.empty()) {
    t.label = "<id " + std::to_string(id) + ">";
    t.unknown = true;
    return t;
  }
  t.text = m_impl->bytesOf(e, false);
  t.label = pieceLabels({t.text}).front();
  return t;
}

std::optional<std::string> HfTokenizer::maskToken() const {
  for (const char* candidate : {"[MASK]", "<mask>"}) {
    if (tokenToId(candidate)) return std::string(candidate);
  }
  return std::nullopt;
}

}  // namespace attnscope
