// SPDX-License-Identifier: GPL-3.0-or-later
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "arg_parser.h"
#include "attnscope/char_tokenizer.h"
#include "attnscope/error.h"
#include "attnscope/model_spec.h"
#include "attnscope/result_json.h"
#include "attnscope/toy_config.h"
#include "attnscope/utf8.h"
#include "attnscope/word_tokenizer.h"
#include "commands.h"

namespace attnscope::cli {

int tokenizeCommand(const std::vector<std::string>& args) {
  ArgParser p("attnscope-cli tokenize", "Split text into tokens and print one per line: id, text.");
  p.option("--text", "TEXT", "the text to split")
      .option("--tokenizer", "T", "char (default) or word")
      .option("--model", "M", "use this model's tokenizer instead: gpt2, a model folder, toy")
      .option("--json", "FILE", "write {\"ids\": [...], \"tokens\": [...]}");
  p.parse(args);
  if (p.helpRequested()) {
    std::cout << p.help();
    return 0;
  }
  if (!p.has("--text")) throw UsageError("--text is required");
  const std::string text = p.value("--text");
  if (text.empty()) throw UsageError("--text is empty: give some text");
  requireValidUtf8(text, "--text");
  std::vector<Token> tokens;
  if (p.has("--model")) {
    if (p.has("--tokenizer")) throw UsageError("give --model or --tokenizer, not both");
    ModelSpec spec;
    spec.source = p.value("--model");
    tokens = openModel(spec)->tokenize(text);
  } else if (parseTokenizer(p.value("--tokenizer", "char")) == TokenizerKind::Char) {
    tokens = CharTokenizer().encode(text);
  } else {
    tokens = WordTokenizer().encode(text);
  }
  nlohmann::json ids = nlohmann::json::array(), texts = nlohmann::json::array();
  for (const Token& t : tokens) {
    std::printf("%lld\t%s\n", static_cast<long long>(t.id), t.label.c_str());
    ids.push_back(t.id);
    texts.push_back(t.text);
  }
  if (p.has("--json")) {
    writeTextFile(p.value("--json"), nlohmann::json{{"ids", ids}, {"tokens", texts}}.dump(
                                         2, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return 0;
}

}  // namespace attnscope::cli
