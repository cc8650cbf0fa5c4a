// SPDX-License-Identifier: GPL-3.0-or-later
//
// Writes tests/data/tokenizers/reference/opt.json: the ids Hugging Face's own `tokenizers` library
// (Rust core, through its Node binding) gives for a few strings with an OPT-like tokenizer.json,
// composed here from /work/shared/data/gpt2/{encoder.json,vocab.bpe}: OPT's specials <s> <pad> </s>
// <unk> as ids 0-3, GPT-2's tokens after them (id + 4; <|endoftext|> left out), byte-level BPE, and
// the post-processor transformers' GPT2Converter writes for a GPT2Tokenizer with add_bos_token
// (OPT's folders set it in tokenizer_config.json): TemplateProcessing "</s>:0 $A:0". OPT's real
// vocab.json orders GPT-2's tokens differently; the ids here are this composition's, and
// bpe_tokenizer_test.cpp composes the same vocab.json + merges.txt (no tokenizer.json, as OPT's
// folders ship) to check FolderTokenizer's add_bos_token against them.
//
// Usage (tokenizers is not a project dependency; see gen-tokenizer-reference.js):
//   NODE_PATH=/tmp/tokref/node_modules node scripts/gen-opt-tokenizer-reference.js
// Optional environment: SHARED=/path/to/shared/data (default /work/shared/data).
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const { Tokenizer } = require("tokenizers");

const SHARED = process.env.SHARED || "/work/shared/data";
const OUT = path.join("tests", "data", "tokenizers", "reference", "opt.json");
// (No "</s>" inside a text: GPT2Tokenizer would match it as the added token, vocab.json's
// tokenizer reads it as text, as it reads GPT-2's <|endoftext|>.)
const TEXTS = ["Hello world", "The quick brown fox jumps over the lazy dog.", " leading space",
               "café 中文 😀"];

const encoder = JSON.parse(fs.readFileSync(path.join(SHARED, "gpt2", "encoder.json"), "utf8"));
const merges = fs.readFileSync(path.join(SHARED, "gpt2", "vocab.bpe"), "utf8").split("\n").slice(1)
  .filter((l) => l.length);
const specials = ["<s>", "<pad>", "</s>", "<unk>"];
const vocab = {};
specials.forEach((t, i) => (vocab[t] = i));
for (const [t, i] of Object.entries(encoder)) if (t !== "<|endoftext|>") vocab[t] = i + 4;
const bos = { SpecialToken: { id: "</s>", type_id: 0 } };
const tokenizer = {
  version: "1.0", truncation: null, padding: null,
  added_tokens: specials.map((t, i) => ({ id: i, content: t, single_word: false, lstrip: false, rstrip: false,
                                          normalized: true, special: true })),
  normalizer: null,
  pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: "TemplateProcessing", single: [bos, { Sequence: { id: "A", type_id: 0 } }],
                    pair: [bos, { Sequence: { id: "A", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } }],
                    special_tokens: { "</s>": { id: "</s>", ids: [2], tokens: ["</s>"] } } },
  decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "", end_of_word_suffix: "",
           fuse_unk: false, byte_fallback: false, vocab, merges },
};

(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "opt-tokenizer-"));
  const file = path.join(dir, "tokenizer.json");
  fs.writeFileSync(file, JSON.stringify(tokenizer));
  const tok = Tokenizer.fromFile(file);
  const cases = [];
  for (const text of TEXTS) {
    const e = await tok.encode(text);
    cases.push({ text, ids: e.getIds() });
  }
  fs.rmSync(dir, { recursive: true });
  fs.writeFileSync(OUT, JSON.stringify({ composed: "opt", bos: "</s>", cases }, null, 1) + "\n");
  console.log(`wrote ${OUT}: ${cases.length} cases`);
})();
