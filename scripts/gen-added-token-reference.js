// SPDX-License-Identifier: GPL-3.0-or-later
//
// Writes tests/data/tokenizers/reference/added_tokens.json: how Hugging Face's own `tokenizers`
// library (Rust core, through its Node binding) matches added tokens that overlap, single_word
// ones among them, on strings where a single_word match lacks a word boundary. Hugging Face
// takes the leftmost-longest match over every added token and discards a single_word one without
// boundaries, searching on after it; shorter tokens at the same start are not tried. The file
// holds the tokenizer.json and each string's tokens, ids and UTF-8 byte offsets.
//
// Usage (tokenizers is not a project dependency, install it anywhere):
//   mkdir -p /tmp/tokref && cd /tmp/tokref && npm init -y && npm install tokenizers@0.23
//   NODE_PATH=/tmp/tokref/node_modules node scripts/gen-added-token-reference.js
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const { Tokenizer } = require("tokenizers");

const added = (id, content, singleWord, extra = {}) => ({
  id, content, single_word: singleWord, lstrip: false, rstrip: false, normalized: false,
  special: false, ...extra,
});
const tokenizer = {
  version: "1.0", truncation: null, padding: null,
  added_tokens: [
    // Ids as real files have them: after the vocabulary, or the vocabulary's own ("été").
    added(8, "ab", true), added(9, "a", false), added(10, "abcd", true), added(11, "bc", false),
    added(12, "<x>", true, { lstrip: true }), added(7, "été", true), added(13, "d", false),
  ],
  normalizer: null, pre_tokenizer: { type: "Whitespace" }, post_processor: null, decoder: null,
  model: {
    type: "WordLevel",
    vocab: { "[UNK]": 0, "abc": 1, "c": 2, "bcd": 3, "x": 4, "e": 5, "abcde": 6, "été": 7 },
    unk_token: "[UNK]",
  },
};
const strings = [
  "abc", "ab c", "ab", "abcde", "x abcd", "abcdx bc", "a ab abc", "xab ab_ abd", "abcd.", "_abcd",
  "bcd abcd bc", "a<x>b", "c <x>", "étéab été ab", "aété été, d", "dab abcdd",
];

// Unicode scalar offsets (what the binding reports) to UTF-8 byte offsets.
function byteOffset(text, scalars) {
  return Buffer.byteLength(Array.from(text).slice(0, scalars).join(""), "utf8");
}

(async () => {
  const file = path.join(os.tmpdir(), "attnscope-added-tokens.json");
  fs.writeFileSync(file, JSON.stringify(tokenizer));
  const tok = await Tokenizer.fromFile(file);
  const cases = [];
  for (const text of strings) {
    const e = await tok.encode(text);
    cases.push({
      text, ids: e.getIds(), tokens: e.getTokens(),
      offsets: e.getOffsets().map(([b, s]) => [byteOffset(text, b), byteOffset(text, s)]),
    });
  }
  const out = {
    oracle: "tokenizers " + require("tokenizers/package.json").version, tokenizer, cases,
  };
  const dest = path.join(__dirname, "..", "tests", "data", "tokenizers", "reference", "added_tokens.json");
  fs.writeFileSync(dest, JSON.stringify(out, null, 1) + "\n");
  console.log("wrote " + dest + " (" + cases.length + " cases)");
})();
