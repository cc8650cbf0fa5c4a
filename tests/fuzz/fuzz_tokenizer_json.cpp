// SPDX-License-Identifier: GPL-3.0-or-later
// The Hugging Face tokenizer.json reader (HfTokenizer) on arbitrary bytes, two ways:
//  (a) the bytes as a tokenizer.json: fromJson accepts them or throws attnscope::Error (a user
//      error, never Internal, never another exception); a tokenizer it accepts encodes a fixed
//      sample text (and a pair) with offsets inside the text and model ids inside vocabSize().
//  (b) the bytes as text for one of the tokenizers known to be valid (the first byte picks it):
//      tests/data/tokenizers/{wordpiece,wordlevel,unigram}.json, the valid_*.json seeds of
//      corpus/tokenizer_json (together they use every component type), and a byte-level BPE
//      over all 256 bytes written here. Invalid UTF-8 throws
//      Error(InvalidArgument); valid UTF-8 encodes without an error, every token's offsets lie in
//      its text on character boundaries with begin <= end, every id is below vocabSize(), the pair
//      encoding keeps the first text's ids, encode() agrees with encodeIds(), and the byte-level
//      BPE's token bytes spell the text again.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../core/gpt2_byte_symbols.h"
#include "attnscope/error.h"
#include "attnscope/hf_tokenizer.h"
#include "attnscope/utf8.h"
#include "fuzz_check.h"

namespace {

using attnscope::Error;
using attnscope::ErrorKind;
using attnscope::HfEncoding;
using attnscope::HfTokenizer;
namespace fuzz = attnscope::fuzz;

struct Fixed {
  std::string name;
  HfTokenizer tokenizer;
  bool lossless;  // token bytes concatenate to the text (byte-level BPE, no prefix space)
};

std::vector<Fixed>* g_fixed = nullptr;

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// GPT-2 style: every byte is a token (ids 0..255), a few merges, one special added token and one
/// plain one. No prefix space and no inserted tokens, so its encodings are lossless.
std::string byteLevelBpeJson() {
  using attnscope::test::gpt2ByteSymbol;
  using attnscope::test::gpt2Symbols;
  const std::vector<std::pair<std::string, std::string>> merges = {
      {" ", "t"},           {"h", "e"},   {" t", "he"},     {"i", "n"},
      {" ", "a"},           {"e", "r"},   {"\xC3", "\xA9"}, {"\xE2", "\x80"},
      {"\xE2\x80", "\x94"}, {"\n", "\n"}, {"1", "2"}};
  std::string vocab;
  for (int b = 0; b < 256; ++b)
    vocab +=
        jsonString(gpt2ByteSymbol(static_cast<unsigned char>(b))) + ": " + std::to_string(b) + ", ";
  std::string mergeList;
  int id = 256;
  for (const auto& [a, b] : merges) {
    vocab += jsonString(gpt2Symbols(a + b)) + ": " + std::to_string(id++) + ", ";
    if (!mergeList.empty()) mergeList += ", ";
    mergeList += jsonString(gpt2Symbols(a) + " " + gpt2Symbols(b));
  }
  vocab.resize(vocab.size() - 2);
  return R"({"version": "1.0", "added_tokens": [
  {"id": 300, "content": "<|endoftext|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
  {"id": 301, "content": "attnscope", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false}],
 "normalizer": null,
 "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
 "post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
 "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
 "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false,
   "vocab": {)" +
         vocab + R"(}, "merges": [)" + mergeList + "]}}";
}

bool isBoundary(const std::string& s, std::size_t i) {
  return i >= s.size() || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
}

std::string describe(const std::string& who, const std::string& what) { return who + ": " + what; }

/// The invariants of one encoding. `idsInVocab`: every id, inserted special tokens included, must
/// be below vocabSize (true for the fixed tokenizers, whose post-processors name real tokens).
void checkEncoding(const std::string& who, const HfTokenizer& tok, const HfEncoding& e,
                   const std::string& text, const std::string* pair, bool idsInVocab) {
  const std::size_t n = e.ids.size();
  if (e.tokens.size() != n || e.begins.size() != n || e.ends.size() != n || e.typeIds.size() != n ||
      e.sequences.size() != n || e.special.size() != n) {
    fuzz::fail(describe(who, "HfEncoding fields differ in length"));
  }
  const std::size_t vocab = tok.vocabSize();
  for (std::size_t i = 0; i < n; ++i) {
    const int seq = e.sequences[i];
    if (seq == -1) {
      if (!e.special[i]) fuzz::fail(describe(who, "an inserted token is not marked special"));
      if (e.begins[i] != 0 || e.ends[i] != 0)
        fuzz::fail(describe(who, "an inserted special token has a non-empty span"));
    } else if (seq == 0 || (seq == 1 && pair)) {
      const std::string& src = seq == 0 ? text : *pair;
      if (e.begins[i] > e.ends[i]) fuzz::fail(describe(who, "token begin > end"));
      if (e.ends[i] > src.size()) fuzz::fail(describe(who, "token offsets outside the text"));
      if (!isBoundary(src, e.begins[i]) || !isBoundary(src, e.ends[i]))
        fuzz::fail(describe(who, "token offsets inside a UTF-8 character"));
    } else {
      fuzz::fail(describe(who, "sequence " + std::to_string(seq) + " without such an input"));
    }
    if (seq >= 0 || idsInVocab) {
      if (e.ids[i] < 0 || static_cast<uint64_t>(e.ids[i]) >= vocab) {
        fuzz::fail(describe(
            who, "id " + std::to_string(e.ids[i]) + " outside vocabSize " + std::to_string(vocab)));
      }
    }
  }
}

/// The ids of the tokens that came from one input.
std::vector<int64_t> idsOfSequence(const HfEncoding& e, int seq) {
  std::vector<int64_t> out;
  for (std::size_t i = 0; i < e.ids.size(); ++i) {
    if (e.sequences[i] == seq) out.push_back(e.ids[i]);
  }
  return out;
}

/// Runs f; an attnscope::Error comes back as its kind, anything else that is thrown is a bug.
template <typename F>
std::optional<ErrorKind> errorOf(const std::string& who, F&& f) {
  try {
    f();
    return std::nullopt;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Internal)
      fuzz::fail(describe(who, std::string("internal error: ") + e.what()));
    return e.kind();
  } catch (const std::exception& e) {
    fuzz::fail(describe(who, std::string("non-attnscope exception: ") + e.what()));
  } catch (...) {
    fuzz::fail(describe(who, "non-std exception"));
  }
}

/// (b): the input as text for a tokenizer that is known to be valid.
void encodeWithFixed(const Fixed& f, const std::string& text) {
  const bool valid = attnscope::isValidUtf8(text);
  // The pair: the text split in two at its middle (either half may then be invalid UTF-8).
  const std::string first = text.substr(0, text.size() / 2);
  const std::string second = text.substr(text.size() / 2);
  const bool pairValid = attnscope::isValidUtf8(first) && attnscope::isValidUtf8(second);

  HfEncoding single;
  const auto singleError = errorOf(f.name, [&] {
    single = f.tokenizer.encodeIds(text);
    checkEncoding(f.name, f.tokenizer, single, text, nullptr, true);
  });
  std::vector<attnscope::Token> tokens;
  const auto tokensError = errorOf(f.name, [&] { tokens = f.tokenizer.encode(text); });
  if (!valid) {
    if (singleError != ErrorKind::InvalidArgument || tokensError != ErrorKind::InvalidArgument)
      fuzz::fail(describe(f.name, "invalid UTF-8 did not give Error(InvalidArgument)"));
  } else {
    if (singleError || tokensError)
      fuzz::fail(describe(f.name, "a valid tokenizer threw on valid UTF-8"));
    if (tokens.size() != single.ids.size())
      fuzz::fail(describe(f.name, "encode() and encodeIds() give different token counts"));
    std::string spelled;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const attnscope::Token& t = tokens[i];
      if (t.id != single.ids[i] || t.byteBegin != single.begins[i] || t.byteEnd != single.ends[i])
        fuzz::fail(describe(f.name, "encode() and encodeIds() disagree on a token"));
      spelled += t.text;
    }
    if (f.lossless && spelled != text)
      fuzz::fail(describe(f.name, "byte-level tokens do not spell the text"));
  }

  HfEncoding both;
  const auto pairError = errorOf(f.name + " (pair)", [&] {
    both = f.tokenizer.encodeIds(first, &second);
    checkEncoding(f.name + " (pair)", f.tokenizer, both, first, &second, true);
  });
  if (!pairValid) {
    if (pairError != ErrorKind::InvalidArgument)
      fuzz::fail(describe(f.name, "an invalid UTF-8 pair did not give Error(InvalidArgument)"));
    return;
  }
  if (pairError) fuzz::fail(describe(f.name, "a valid tokenizer threw on a valid UTF-8 pair"));
  // Each input is encoded on its own: the first text's ids are the same with or without a pair.
  HfEncoding alone;
  if (errorOf(f.name, [&] { alone = f.tokenizer.encodeIds(first); }))
    fuzz::fail(describe(f.name, "a valid tokenizer threw on valid UTF-8"));
  if (idsOfSequence(alone, 0) != idsOfSequence(both, 0))
    fuzz::fail(describe(f.name, "the pair changed the first text's ids"));
}

/// (a): the input as a tokenizer.json.
void parseAsTokenizerJson(const std::string& json) {
  std::unique_ptr<HfTokenizer> tok;
  errorOf("fromJson",
          [&] { tok = std::make_unique<HfTokenizer>(HfTokenizer::fromJson(json, "fuzz")); });
  if (!tok) return;
  static const std::string kText =
      "Hello, World! \xC2\xBFQu\xC3\xA9 tal? na\xC3\xAFve cafe\xCC\x81 123 4567 "
      "\xE6\x9D\xB1\xE4\xBA\xAC "
      "\xCE\xB5\xCE\xBB\xCE\xBB \xF0\x9F\xA4\x97 <s> [CLS] <|endoftext|> x-y a\xC2\xA0"
      "b  \t\n end.";
  static const std::string kPair = "Second: ab 12! \xEF\xAC\x81sh";
  // A tokenizer that loads may still refuse a text (a WordPiece unk_token missing from the
  // vocabulary): Error(InvalidArgument) is fine, anything else is not.
  errorOf("fuzzed tokenizer", [&] {
    checkEncoding("fuzzed tokenizer", *tok, tok->encodeIds(kText), kText, nullptr, false);
  });
  errorOf("fuzzed tokenizer (pair)", [&] {
    checkEncoding("fuzzed tokenizer (pair)", *tok, tok->encodeIds(kText, &kPair), kText, &kPair,
                  false);
  });
  errorOf("fuzzed tokenizer encode()", [&] {
    for (const attnscope::Token& t : tok->encode(kText)) {
      if (t.byteBegin > t.byteEnd || t.byteEnd > kText.size())
        fuzz::fail("fuzzed tokenizer: encode() span outside the text");
    }
  });
  errorOf("fuzzed tokenizer lookups", [&] {
    const std::size_t vocab = tok->vocabSize();
    for (int64_t id : {int64_t{-1}, int64_t{0}, int64_t{1}, static_cast<int64_t>(vocab) - 1,
                       static_cast<int64_t>(vocab)}) {
      (void)tok->tokenOf(id);
    }
    (void)tok->maskToken();
    (void)tok->tokenToId("a");
  });
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_fixed = new std::vector<Fixed>();
  const auto add = [](const std::string& name, HfTokenizer t, bool lossless) {
    g_fixed->push_back(Fixed{name, std::move(t), lossless});
  };
  try {
    add("inline byte-level BPE", HfTokenizer::fromJson(byteLevelBpeJson(), "inline byte-level BPE"),
        true);
    const std::string data = std::string(ATTNSCOPE_TEST_DATA) + "/tokenizers/";
    for (const char* f : {"wordpiece.json", "wordlevel.json", "unigram.json"}) {
      if (std::filesystem::exists(data + f)) add(f, HfTokenizer::fromFile(data + f), false);
    }
    // Every valid seed is also a fixed tokenizer: together they hold every component type.
    std::vector<std::filesystem::path> seeds;
    if (std::filesystem::is_directory(ATTNSCOPE_FUZZ_SEEDS)) {
      for (const auto& entry : std::filesystem::directory_iterator(ATTNSCOPE_FUZZ_SEEDS)) {
        if (entry.path().filename().string().rfind("valid_", 0) == 0) seeds.push_back(entry.path());
      }
    }
    std::sort(seeds.begin(), seeds.end());
    for (const auto& p : seeds)
      add(p.filename().string(), HfTokenizer::fromFile(p.string()), false);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_tokenizer_json: a fixed tokenizer does not load: %s\n", e.what());
    std::abort();
  }
  std::fprintf(stderr, "fuzz_tokenizer_json: %zu fixed tokenizers\n", g_fixed->size());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  parseAsTokenizerJson(input);
  // One fixed tokenizer per input, chosen by the first byte (which stays part of the text):
  // encoding with all of them would make every run ~20 times slower under the sanitizers.
  if (size > 0) encodeWithFixed((*g_fixed)[data[0] % g_fixed->size()], input);
  return 0;
}
