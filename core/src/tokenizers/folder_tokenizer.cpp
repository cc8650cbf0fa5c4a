// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/folder_tokenizer.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <utility>

#include "attnscope/bpe_tokenizer.h"
#include "attnscope/error.h"
#include "attnscope/sentencepiece_tokenizer.h"
#include "attnscope/utf8.h"
#include "io/file_io.h"
#include "io/gguf_file.h"
#include "io/gguf_vocabulary_reader.h"
#include "io/strict_json.h"
#include "tokenizers/gguf_vocabulary.h"

namespace attnscope {

namespace fs = std::filesystem;

struct FolderTokenizer::Impl {
  std::string source;
  std::optional<HfTokenizer> hf;
  std::optional<BpeTokenizer> bpe;
  std::optional<SentencePieceTokenizer> spm;
  std::optional<Token> bos;  // vocab.json + merges.txt: GPT2Tokenizer's add_bos_token (OPT)
};

namespace {

/// The SentencePiece model files folders ship: Llama's, T5's, Marian's source side.
constexpr const char* kSentencePieceFiles[] = {"tokenizer.model", "spiece.model",
                                               "sentencepiece.bpe.model", "source.spm"};

/// GPT2Tokenizer (vocab.json + merges.txt without tokenizer.json) puts bos_token before the text
/// when tokenizer_config.json says "add_bos_token": true, as OPT's folders do ("</s>", id 2);
/// the default is false (GPT-2's). bos_token is a string or an AddedToken's {"content": ...}.
std::optional<Token> folderBosToken(const fs::path& folder, const BpeTokenizer& bpe) {
  std::error_code ec;
  const fs::path path = folder / "tokenizer_config.json";
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  const std::string source = path.string();
  const nlohmann::json c = parseStrictJson(readFile(source, kMaxConfigBytes), source, 64);
  if (!c.is_object() || !c.contains("add_bos_token")) return std::nullopt;
  if (!c["add_bos_token"].is_boolean())
    throw Error(ErrorKind::Format, source + ": \"add_bos_token\" must be true or false");
  if (!c["add_bos_token"].get<bool>()) return std::nullopt;
  const nlohmann::json* bos = c.contains("bos_token") ? &c["bos_token"] : nullptr;
  if (bos && bos->is_object() && bos->contains("content")) bos = &(*bos)["content"];
  if (!bos || !bos->is_string())
    throw Error(ErrorKind::Format,
                source + ": \"add_bos_token\" is true but \"bos_token\" is not a token");
  Token t;
  t.text = bos->get<std::string>();
  for (std::size_t id = 0; id < bpe.vocabSize(); ++id) {
    if (bpe.tokenBytes(static_cast<int64_t>(id)) != t.text) continue;
    t.id = static_cast<int64_t>(id);
    t.label = t.text;
    t.special = true;
    return t;
  }
  throw Error(ErrorKind::Format, source + ": bos_token \"" + t.text + "\" is not in vocab.json");
}

}  // namespace

FolderTokenizer::FolderTokenizer(std::shared_ptr<const Impl> impl) : m_impl(std::move(impl)) {}

FolderTokenizer FolderTokenizer::open(const std::string& path) {
  auto impl = std::make_shared<Impl>();
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_regular_file(p, ec)) {
    impl->source = path;
    if (GgufFile::hasMagic(path)) {
      // Whatever it is called (Ollama's blobs have no extension): the tokenizer.ggml.* metadata.
      // Nothing borrows from the file once the tokenizer is built.
      const GgufFile file = GgufFile::open(path);
      impl->hf = tokenizerFromGguf(readGgufVocabulary(file, path));
    } else if (p.extension() == ".json") {
      impl->hf = HfTokenizer::fromFile(path);
    } else {
      impl->spm = SentencePieceTokenizer::fromFile(path);
    }
    return FolderTokenizer(impl);
  }
  if (!fs::is_directory(p, ec))
    throw Error(ErrorKind::Io, "no tokenizer at " + path + ": not a file or folder");
  if (fs::is_regular_file(p / "tokenizer.json", ec)) {
    impl->source = (p / "tokenizer.json").string();
    impl->hf = HfTokenizer::fromFile(impl->source);
  } else if (fs::exists(p / "merges.txt", ec) ||
             (fs::exists(p / "vocab.json", ec) && !fs::exists(p / "source.spm", ec))) {
    // Marian folders ship vocab.json without merges.txt: it maps source.spm's pieces to the
    // model's ids (the family reads it), so the tokenizer is the SentencePiece model.
    impl->source = (p / "vocab.json").string();
    impl->bpe = BpeTokenizer::fromFiles((p / "vocab.json").string(), (p / "merges.txt").string());
    impl->bos = folderBosToken(p, *impl->bpe);
  } else {
    for (const char* name : kSentencePieceFiles) {
      if (fs::is_regular_file(p / name, ec)) {
        impl->source = (p / name).string();
        impl->spm = SentencePieceTokenizer::fromFile(impl->source);
        break;
      }
    }
    if (!impl->spm) {
      throw Error(ErrorKind::Io,
                  "no tokenizer in " + path +
                      ": expected tokenizer.json, vocab.json + merges.txt, or a SentencePiece "
                      "tokenizer.model / spiece.model / source.spm");
    }
  }
  return FolderTokenizer(impl);
}

FolderTokenizer FolderTokenizer::fromHf(HfTokenizer tokenizer, std::string source) {
  auto impl = std::make_shared<Impl>();
  impl->source = std::move(source);
  impl->hf = std::move(tokenizer);
  return FolderTokenizer(impl);
}

std::vector<Token> FolderTokenizer::encode(const std::string& text) const {
  if (m_impl->hf) return m_impl->hf->encode(text);
  if (m_impl->spm) return m_impl->spm->encode(text);
  std::vector<Token> tokens = m_impl->bpe->encode(text);
  if (m_impl->bos) tokens.insert(tokens.begin(), *m_impl->bos);
  return tokens;
}

std::vector<Token> FolderTokenizer::encodePair(const std::string& text,
                                               const std::string& pair) const {
  if (!m_impl->hf) {
    throw Error(ErrorKind::InvalidArgument,
                m_impl->source +
                    " has no sentence-pair template: give one text, or a folder "
                    "with tokenizer.json");
  }
  return m_impl->hf->encodePair(text, pair);
}

bool FolderTokenizer::supportsPair() const { return m_impl->hf.has_value(); }

std::optional<std::pair<std::string, int64_t>> FolderTokenizer::maskToken() const {
  if (m_impl->hf) {
    if (const auto name = m_impl->hf->maskToken())
      return std::make_pair(*name, *m_impl->hf->tokenToId(*name));
    return std::nullopt;
  }
  if (m_impl->spm) {
    for (const char* name : {"<mask>", "[MASK]"}) {
      if (const auto id = m_impl->spm->pieceToId(name))
        return std::make_pair(std::string(name), *id);
    }
  }
  return std::nullopt;
}

std::string FolderTokenizer::name() const {
  if (m_impl->hf) return m_impl->hf->name();
  return m_impl->spm ? m_impl->spm->name() : m_impl->bpe->name();
}

HfEncoding FolderTokenizer::encodeIds(const std::string& text, const std::string* pair) const {
  if (m_impl->hf) return m_impl->hf->encodeIds(text, pair);
  if (pair) {
    throw Error(ErrorKind::InvalidArgument,
                m_impl->source +
                    " has no sentence-pair template: give one text, or a folder "
                    "with tokenizer.json");
  }
  HfEncoding e;
  for (const Token& t : encode(text)) {
    e.ids.push_back(t.id);
    e.tokens.push_back(t.text);
    e.begins.push_back(t.byteBegin);
    e.ends.push_back(t.byteEnd);
    e.typeIds.push_back(0);
    e.sequences.push_back(0);
    e.special.push_back(t.special);
    e.labels.push_back(t.label);
  }
  return e;
}

std::size_t FolderTokenizer::vocabSize() const {
  if (m_impl->hf) return m_impl->hf->vocabSize();
  return m_impl->spm ? m_impl->spm->vocabSize() : m_impl->bpe->vocabSize();
}

Token FolderTokenizer::tokenOf(int64_t id) const {
  if (m_impl->hf) return m_impl->hf->tokenOf(id);
  if (m_impl->spm) return m_impl->spm->tokenOf(id);
  Token t;
  t.id = id;
  if (id < 0 || static_cast<std::size_t>(id) >= m_impl->bpe->vocabSize()) {
    t.label = "<id " + std::to_string(id) + ">";
    t.unknown = true;
    return t;
  }
  t.text = m_impl->bpe->tokenBytes(id);
  t.label = readableLabel(t.text);
  return t;
}

const std::string& FolderTokenizer::source() const { return m_impl->source; }

}  // namespace attnscope
