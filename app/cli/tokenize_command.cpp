// SPDX-License-Identifier: GPL-3.0-or-later
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "arg_parser.h"
#include "attnscope/char_tokenizer.h"
#include "attnscope/error.h"
#include "attnscope/folder_tokenizer.h"
#include "attnscope/model_catalog.h"
#include "attnscope/model_spec.h"
#include "attnscope/result_json.h"
#include "attnscope/toy_config.h"
#include "attnscope/utf8.h"
#include "attnscope/word_tokenizer.h"
#include "commands.h"

namespace attnscope::cli {
namespace {

/// The folder (or tokenizer.json) whose tokenizer --model names, when it names one directly:
/// a path, or a cached model name. Empty for toy, default and tiny-GPT checkpoints.
std::string tokenizerPath(const std::string& model) {
  std::error_code ec;
  const std::filesystem::path p(model);
  if (std::filesystem::is_directory(p, ec) || isGgufFile(model)) return model;
  if (std::filesystem::is_regular_file(p, ec) &&
      (p.extension() == ".json" || p.extension() == ".model" || p.extension() == ".spm"))
    return model;
  if (model != "toy" && model != "default" && p.extension() != ".safetensors") {
    if (const auto cached = resolveCachedModel(model)) return *cached;
  }
  return {};
}

// The tokens of a model without a tokenizer file (toy, default, a checkpoint), or of --tokenizer.
std::vector<Token> tokensOf(const ArgParser& p, const std::string& text) {
  if (p.has("--model")) {
    ModelSpec spec;
    spec.source = p.value("--model");
    return openModel(spec)->tokenize(text);
  }
  if (parseTokenizer(p.value("--tokenizer", "char")) == TokenizerKind::Char)
    return CharTokenizer().encode(text);
  return WordTokenizer().encode(text);
}

}  // namespace

int tokenizeCommand(const std::vector<std::string>& args) {
  ArgParser p(
      "attnscope-cli tokenize",
      "Split text into tokens and print one per line: id, label (the decoder's readable form).\n"
      "A model folder's tokenizer is read from tokenizer.json (Hugging Face's pipeline: BPE, "
      "WordPiece, Unigram, WordLevel with their normalizers, pre-tokenizers, post-processors and "
      "decoders) or GPT-2's vocab.json + merges.txt; the ids are those the model is fed, special "
      "tokens included where the post-processor puts them.");
  p.option("--text", "TEXT", "the text to split")
      .option("--pair", "TEXT",
              "a second text: a sentence pair, as the tokenizer's template joins them")
      .option("--tokenizer", "T", "char (default) or word")
      .option("--model", "M",
              "use this model's tokenizer instead: a model folder, a tokenizer.json, a GGUF "
              "file (vocabulary-only ones too), a cached model, toy, default")
      .option("--json", "FILE",
              "write {\"ids\": [...], \"tokens\": [...], \"labels\": [...], \"offsets\": [[begin, "
              "end], ...], "
              "\"type_ids\": [...]} (offsets in bytes)");
  p.parse(args);
  if (p.helpRequested()) {
    std::cout << p.help();
    return 0;
  }
  if (!p.has("--text")) throw UsageError("--text is required");
  const std::string text = p.value("--text");
  if (text.empty()) throw UsageError("--text is empty: give some text");
  requireValidUtf8(text, "--text");
  const std::string pair = p.value("--pair", "");
  if (p.has("--pair")) {
    if (pair.empty()) throw UsageError("--pair is empty: give some text");
    requireValidUtf8(pair, "--pair");
  }
  nlohmann::json ids = nlohmann::json::array(), texts = nlohmann::json::array(),
                 labels = nlohmann::json::array(), offsets = nlohmann::json::array(),
                 typeIds = nlohmann::json::array();
  const std::string folder = p.has("--model") ? tokenizerPath(p.value("--model")) : std::string();
  if (p.has("--model") && p.has("--tokenizer"))
    throw UsageError("give --model or --tokenizer, not both");
  if (!folder.empty()) {
    const FolderTokenizer tok = FolderTokenizer::open(folder);
    const HfEncoding e = tok.encodeIds(text, p.has("--pair") ? &pair : nullptr);
    for (std::size_t i = 0; i < e.ids.size(); ++i) {
      const std::string& label = e.labels[i];
      std::printf("%lld\t%s\n", static_cast<long long>(e.ids[i]), label.c_str());
      ids.push_back(e.ids[i]);
      texts.push_back(e.tokens[i]);
      labels.push_back(label);
      offsets.push_back({e.begins[i], e.ends[i]});
      typeIds.push_back(e.typeIds[i]);
    }
  } else {
    if (p.has("--pair"))
      throw UsageError(
          "--pair needs a model folder or tokenizer.json with a pair template (--model)");
    for (const Token& t : tokensOf(p, text)) {
      std::printf("%lld\t%s\n", static_cast<long long>(t.id), t.label.c_str());
      ids.push_back(t.id);
      texts.push_back(t.text);
      labels.push_back(t.label);
      offsets.push_back({t.byteBegin, t.byteEnd});
      typeIds.push_back(0);
    }
  }
  if (p.has("--json")) {
    const nlohmann::json j = {{"ids", ids},
                              {"tokens", texts},
                              {"labels", labels},
                              {"offsets", offsets},
                              {"type_ids", typeIds}};
    writeTextFile(p.value("--json"),
                  j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return 0;
}

}  // namespace attnscope::cli
