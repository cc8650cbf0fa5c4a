// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/gguf_vocabulary_reader.h"

#include "attnscope/error.h"

namespace attnscope {
namespace {

[[noreturn]] void vocabularyKeyError(const std::string& key, const std::string& what) {
  throw Error(ErrorKind::Format, "gguf: " + key + " must be " + what);
}

const GgufValue* arrayOf(const GgufFile& file, const std::string& key, const std::string& what,
                         bool (*elementFits)(GgufValueType)) {
  const GgufValue* v = file.find(key);
  if (v && (!v->isArray() || !elementFits(v->elementType))) vocabularyKeyError(key, what);
  return v;
}

bool isString(GgufValueType t) { return t == GgufValueType::String; }
bool isNumber(GgufValueType t) {
  return t != GgufValueType::String && t != GgufValueType::Array && t != GgufValueType::Bool;
}
bool isInteger(GgufValueType t) {
  return isNumber(t) && t != GgufValueType::F32 && t != GgufValueType::F64;
}

std::string stringOf(const GgufFile& file, const std::string& key) {
  const GgufValue* v = file.find(key);
  if (!v) return "";
  if (!v->string()) vocabularyKeyError(key, "a string");
  return *v->string();
}

std::optional<int64_t> idOf(const GgufFile& file, const std::string& key) {
  const GgufValue* v = file.find(key);
  if (!v) return std::nullopt;
  const std::optional<int64_t> id = v->integer();
  if (!id || v->type == GgufValueType::Bool) vocabularyKeyError(key, "an integer token id");
  return id;
}

std::optional<bool> flagOf(const GgufFile& file, const std::string& key) {
  const GgufValue* v = file.find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValueType::Bool) vocabularyKeyError(key, "a bool");
  return v->integer() != 0;
}

}  // namespace

GgufVocabulary readGgufVocabulary(const GgufFile& file, const std::string& source) {
  GgufVocabulary v;
  v.source = source;
  v.model = stringOf(file, "tokenizer.ggml.model");
  v.pre = stringOf(file, "tokenizer.ggml.pre");
  if (const GgufValue* tokens =
          arrayOf(file, "tokenizer.ggml.tokens", "an array of strings", isString))
    v.tokens = tokens->strings;
  if (const GgufValue* merges =
          arrayOf(file, "tokenizer.ggml.merges", "an array of strings", isString))
    v.merges = merges->strings;
  if (const GgufValue* scores =
          arrayOf(file, "tokenizer.ggml.scores", "an array of numbers", isNumber)) {
    v.scores.reserve(scores->count);
    for (uint64_t i = 0; i < scores->count; ++i)
      v.scores.push_back(static_cast<float>(*scores->numberAt(i)));
  }
  if (const GgufValue* types =
          arrayOf(file, "tokenizer.ggml.token_type", "an array of integers", isInteger)) {
    v.tokenTypes.reserve(types->count);
    for (uint64_t i = 0; i < types->count; ++i) {
      const std::optional<int64_t> t = types->integerAt(i);
      if (!t || *t < INT32_MIN || *t > INT32_MAX)
        vocabularyKeyError("tokenizer.ggml.token_type", "an array of 32-bit integers");
      v.tokenTypes.push_back(static_cast<int32_t>(*t));
    }
  }
  v.bosId = idOf(file, "tokenizer.ggml.bos_token_id");
  v.eosId = idOf(file, "tokenizer.ggml.eos_token_id");
  v.unkId = idOf(file, "tokenizer.ggml.unknown_token_id");
  v.sepId = idOf(file, "tokenizer.ggml.seperator_token_id");
  v.padId = idOf(file, "tokenizer.ggml.padding_token_id");
  v.clsId = idOf(file, "tokenizer.ggml.cls_token_id");
  v.maskId = idOf(file, "tokenizer.ggml.mask_token_id");
  v.addBos = flagOf(file, "tokenizer.ggml.add_bos_token");
  v.addEos = flagOf(file, "tokenizer.ggml.add_eos_token");
  v.addSep = flagOf(file, "tokenizer.ggml.add_sep_token");
  v.addSpacePrefix = flagOf(file, "tokenizer.ggml.add_space_prefix");
  v.lowercase = flagOf(file, "tokenizer.ggml.normalizer.lowercase");
  return v;
}

}  // namespace attnscope
