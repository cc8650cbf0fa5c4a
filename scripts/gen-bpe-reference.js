// SPDX-License-Identifier: GPL-3.0-or-later
//
// Writes tests/data/bpe_reference.json: [{"text": ..., "ids": [...]}] with GPT-2 token ids computed
// by js-tiktoken's "gpt2" encoding, an implementation independent of ours, so the C++ tests compare
// against something we did not write.
//
// Usage (js-tiktoken is not a project dependency, install it anywhere):
//   mkdir -p /tmp/bperef && cd /tmp/bperef && npm init -y && npm install js-tiktoken
//   NODE_PATH=/tmp/bperef/node_modules node scripts/gen-bpe-reference.js tests/data/bpe_reference.json
"use strict";

const fs = require("fs");
const { getEncoding } = require("js-tiktoken");

const enc = getEncoding("gpt2");

const fixed = [
  "",
  "Hello world",
  "I'm here",
  "don't",
  "they'll",
  "we've they're she'd",
  "'s at the start",
  "DON'T SHOUT",
  "It's John's",
  " leading space",
  "trailing space ",
  "trailing spaces   ",
  "repeated   spaces  between",
  "  \n\n  ",
  "\n",
  " ",
  "   ",
  "\tindented\twith\ttabs",
  "line one\nline two\n\nline four",
  "windows\r\nline\r\nendings\r\n",
  "word\n  indented",
  "a \n b",
  "x\n\ny",
  "12345",
  "3.14",
  "1,000",
  "pi is 3.14159 and e is 2.71828",
  "1234567890123",
  "café",
  "naïve",
  "cafe\u0301",
  "résumé Übermaß Ångström",
  "emoji 😀 here",
  "family 👨‍👩‍👧‍👦 emoji",
  "flags 🇫🇷🇯🇵",
  "thumbs 👍🏽",
  "日本語のテキスト",
  "中文分词测试",
  "한국어 텍스트",
  "مرحبا بالعالم",
  "Привет, мир!",
  "Γειά σου κόσμε",
  "<|endoftext|>",
  "before<|endoftext|>after",
  "Hello!!! What?!? (yes) [no] {maybe} ...",
  "foo@bar.com https://example.com/path?q=1&r=2",
  "--- *** ### $$$ %%%",
  "C++ std::vector<int> v{1, 2, 3};",
  "a\u00a0b\u3000c\u2028d",
  "a\u001cb\u001fc",
  "x\u0085y",
  "a\u000bb\u000cc",
  "The quick brown fox jumps over the lazy dog. " +
      "GPT-2 is a large transformer-based language model with 1.5 billion parameters, " +
      "trained on a dataset of 8 million web pages. GPT-2 is trained with a simple objective: " +
      "predict the next word, given all of the previous words within some text.\n\n" +
      "The diversity of the dataset causes this simple goal to contain naturally occurring " +
      "demonstrations of many tasks across diverse domains.",
];

// Seeded pseudo-random strings drawn from a pool that mixes every branch of the pre-tokenisation
// pattern. The pool avoids U+FEFF (JavaScript's \s includes it, Python's regex does not) and
// recently assigned code points (Unicode tables differ between versions).
const pool = [
  " ", " ", " ", "  ", "\n", "\n", "\r\n", "\t", "\u00a0", "\u3000",
  "a", "b", "e", "t", "s", "the", "The", "ing", "Z", "é", "ß", "ñ", "\u0301",
  "'", "'s", "'t", "'re", "'ll", "'d", "'m", "'ve", "'S",
  "0", "1", "7", "42", "½", "²", "٣",
  ".", ",", "!", "?", "-", "_", "(", ")", "\"", "#", "…", "—", "<|", "|>",
  "日", "本", "語", "中", "文", "ア", "한", "م", "ر", "П", "и", "λ",
  "😀", "👍", "🏽", "\u200d", "👨", "🇫", "🇷", "❤", "\ufe0f", "€", "©",
];

let seed = 20240601;
function rand(n) {
  // xorshift32: deterministic across Node versions, unlike Math.random.
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed % n;
}

const random = [];
for (let i = 0; i < 300; ++i) {
  const parts = 1 + rand(24);
  let s = "";
  for (let j = 0; j < parts; ++j) s += pool[rand(pool.length)];
  random.push(s);
}

// disallowedSpecial = [] makes "<|endoftext|>" ordinary text; the default throws on it.
const cases = fixed.concat(random).map((text) => ({ text, ids: enc.encode(text, [], []) }));

const eot = cases.find((c) => c.text === "<|endoftext|>");
if (eot.ids.length === 1 && eot.ids[0] === 50256) {
  throw new Error("<|endoftext|> was encoded as the special token; it must be plain text");
}
for (const c of cases) {
  if (enc.decode(c.ids) !== c.text) throw new Error("round trip failed for " + JSON.stringify(c.text));
}

const out = process.argv[2] || "tests/data/bpe_reference.json";
fs.writeFileSync(out, "[\n" + cases.map((c) => "  " + JSON.stringify(c)).join(",\n") + "\n]\n");
console.log("wrote " + cases.length + " cases to " + out);
