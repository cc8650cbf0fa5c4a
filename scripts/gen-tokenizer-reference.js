// SPDX-License-Identifier: GPL-3.0-or-later
//
// Writes tests/data/tokenizers/reference/<name>.json, the reference encodings of a fixed list of
// hard strings (and a few sentence pairs) as computed by Hugging Face's own `tokenizers` library
// (Rust core, through its Node binding), an implementation independent of ours:
//
//   gpt2       composed here from /work/shared/data/gpt2/{encoder.json,vocab.bpe} the way Hugging
//              Face's GPT-2 tokenizer.json is laid out ("composed": "gpt2"; the C++ test composes
//              the same file at test time; "composition" records every non-vocabulary field)
//   llama2, llama3, qwen3   the real tokenizer.json files in /work/shared/data/tokenizers/ (read
//              only, never committed)
//   wordpiece, wordlevel, unigram   our fixtures tests/data/tokenizers/<name>.json, written by
//              scripts/make-tokenizer-fixtures.py
//
// and tests/data/tokenizers/reference/spm.json: the ids (and pieces) libsentencepiece's spm_encode
// gives for the same strings with tests/data/tokenizers/{unigram,spm_bpe}.model. spm_encode reads
// one sentence per line, so strings containing "\n" or "\r" are left out of spm.json (listed
// under "skipped").
//
// Each case: {"text", "pair" (null for a single sequence), "ids", "tokens", "type_ids",
// "offsets", "decoded"}. The binding reports offsets in Unicode scalar values; they are converted
// here to UTF-8 byte offsets [begin, end) into the sequence the token came from (the text, or the
// pair for the second sequence); tokens inserted by the post-processor have [0, 0]. "decoded" is
// tokenizer.decode(ids, skip_special_tokens = false).
//
// Usage (tokenizers is not a project dependency, install it anywhere; spm_encode comes from
// Debian's `sentencepiece` package):
//   mkdir -p /tmp/tokref && cd /tmp/tokref && npm init -y && npm install tokenizers@0.23
//   /usr/bin/python3 scripts/make-tokenizer-fixtures.py        # from the repository root, first
//   NODE_PATH=/tmp/tokref/node_modules node scripts/gen-tokenizer-reference.js
// Optional environment: SHARED=/path/to/shared/data (default /work/shared/data).
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const { execFileSync } = require("child_process");
const { Tokenizer } = require("tokenizers");

const SHARED = process.env.SHARED || "/work/shared/data";
const FIXTURES = path.join("tests", "data", "tokenizers");
const OUT = path.join(FIXTURES, "reference");

// The single source of the test strings. Every tokenizer encodes every one of them.
const TEXTS = [
  "Hello world",
  "The quick brown fox jumps over the lazy dog.",
  "café résumé naïve Zoë", // accents, composed (NFC)
  "cafe\u0301 re\u0301sume\u0301 nai\u0308ve Zoe\u0308", // the same, decomposed (NFD)
  "e\u0301\u0301 double combining, \u0301 leading combining mark",
  "ÉCOLE École école ÇA Ça",
  "Straße Größe Fußgänger ÄÖÜ äöü ẞ",
  "Ça va ? Très bien, merci ! « citation »",
  "family 👩‍👩‍👧 emoji", // ZWJ sequence
  "flags 🇫🇷🇩🇪🇯🇵",
  "thumbs 👍🏽 wave 👋🏿 ok👌🏻",
  "😀😃😄 ❤️ ©®™ ✓",
  "中文分词测试",
  "日本語のテキスト",
  "한국어 텍스트",
  "العربية لغة جميلة",
  "עברית היא שפה",
  "mixed RTL: hello مرحبا world שלום!",
  "Привет, мир! Γειά σου κόσμε",
  "Thai ภาษาไทย Hindi हिन्दी",
  "a  b   c    d     e",
  "   leading spaces",
  "trailing spaces   ",
  "  both ends  ",
  " ",
  "  \n\n  ",
  "\tindented\twith\ttabs",
  "tab\tand  space \t mix",
  "line one\nline two\n\nline four",
  "windows\r\nline\r\nendings\r\n",
  "\n",
  "12345 67890",
  "3.14159 2.71828 -0.5 1e-9",
  "1,000,000 and 1.000.000 and 1 000 000",
  "1234567890123456789012345678901234567890",
  "don't I'm they'll we've she'd you're it's",
  "DON'T I'M THEY'LL WE'VE",
  "'s 't 're at the start",
  "CamelCaseWord mixedCASE iPhone XMLHttpRequest ThE QuIcK",
  "https://example.com/path/to/page?q=1&r=two#frag",
  "contact: first.last+tag@example.co.uk, or admin@localhost",
  "non\u00a0breaking\u00a0space",
  "zero\u200bwidth\u200bspace",
  "zwj\u200dalone and \u200d",
  "soft\u00adhyphen",
  "x\u0085y a\u2028b c\u3000d",
  "control\u0001chars\u001fhere\u007f",
  "½ ² ³ ٣ ① ＡＢＣ１２３ ﬁne ㎏", // compatibility characters (NFKC)
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛", // outside the BMP
  "supercalifragilisticexpialidocious".repeat(7), // 238 letters, one word
  "Hello!!! What?!? ...... ---- **** ????",
  "C++ std::vector<int> v{1, 2, 3};",
  "def f(x):\n    return x ** 2  # square\n",
  "if (a != b && c <= d) { return -1; } // done",
  "<s>[CLS] hello </s> [SEP] [MASK] [PAD] [UNK] <unk> <pad>",
  "<|endoftext|>",
  "before<|endoftext|>after <|im_start|>user\nhi<|im_end|>",
  "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>",
  "Der Zug nach München fährt um 7:15 Uhr ab. Le château domine la vallée depuis 1150. " +
      "The museum opens at 9 a.m.; tickets cost $12.50 (children free).",
];

const PAIRS = [
  ["What is the capital of France?", "Paris is the capital of France."],
  ["Héllo wörld", "Straße 123"],
  ["don't stop", "  leading and trailing  "],
  ["中文 text", "日本語 🙂"],
  ["<s> literal", "[SEP] and </s>"],
];

// GPT-2 as Hugging Face's tokenizer.json for "gpt2" lays it out; model.vocab is encoder.json and
// model.merges the lines of vocab.bpe after its "#version" line (as "left right" strings).
const GPT2_COMPOSITION = {
  version: "1.0",
  truncation: null,
  padding: null,
  added_tokens: [{
    id: 50256, content: "<|endoftext|>", single_word: false, lstrip: false, rstrip: false,
    normalized: true, special: true,
  }],
  normalizer: null,
  pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: {
    type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "",
    end_of_word_suffix: "", fuse_unk: false, byte_fallback: false, ignore_merges: false,
    vocab: "<gpt2/encoder.json>", merges: "<gpt2/vocab.bpe without its #version line>",
  },
};

function composeGpt2() {
  const vocab = JSON.parse(fs.readFileSync(path.join(SHARED, "gpt2", "encoder.json"), "utf8"));
  const merges = fs.readFileSync(path.join(SHARED, "gpt2", "vocab.bpe"), "utf8")
    .split("\n")
    .filter((l) => l.length > 0 && !l.startsWith("#version"));
  const tok = JSON.parse(JSON.stringify(GPT2_COMPOSITION));
  tok.model.vocab = vocab;
  tok.model.merges = merges;
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gpt2-tok-")), "tokenizer.json");
  fs.writeFileSync(file, JSON.stringify(tok));
  return file;
}

const TOKENIZERS = [
  { name: "gpt2", source: "composed:gpt2", file: () => composeGpt2() },
  { name: "llama2", source: "shared:llama2/tokenizer.json" },
  { name: "llama3", source: "shared:llama3/tokenizer.json" },
  { name: "qwen3", source: "shared:qwen3/tokenizer.json" },
  { name: "wordpiece", source: "fixture:wordpiece.json" },
  { name: "wordlevel", source: "fixture:wordlevel.json" },
  { name: "unigram", source: "fixture:unigram.json" },
];

function resolve(t) {
  if (t.file) return t.file();
  const [kind, rel] = t.source.split(":");
  return kind === "shared" ? path.join(SHARED, "tokenizers", rel) : path.join(FIXTURES, rel);
}

// byteAt[i] = UTF-8 byte offset of the i-th Unicode scalar value of s (byteAt[length] = total).
function byteTable(s) {
  const t = [0];
  let b = 0;
  for (const ch of s) { // iterates by code point, not UTF-16 unit
    b += Buffer.byteLength(ch, "utf8");
    t.push(b);
  }
  return t;
}

async function encodeCase(tok, text, pair) {
  const enc = pair === null ? await tok.encode(text) : await tok.encode(text, pair);
  const ids = enc.getIds();
  const seqs = enc.getSequenceIds();
  const tables = [byteTable(text), pair === null ? null : byteTable(pair)];
  const offsets = enc.getOffsets().map(([b, e], i) => {
    const s = seqs[i];
    if (s === null || s === undefined) {
      if (b !== 0 || e !== 0) throw new Error("special token with offsets " + b + "," + e);
      return [0, 0];
    }
    const t = tables[s];
    if (!(b >= 0 && b <= e && e < t.length)) throw new Error("offset out of range in " + JSON.stringify(text));
    return [t[b], t[e]];
  });
  return {
    text, pair, ids, tokens: enc.getTokens(), type_ids: enc.getTypeIds(), offsets,
    decoded: await tok.decode(ids, false),
  };
}

function writeCases(file, header, cases) {
  const body = cases.map((c) => "    " + JSON.stringify(c)).join(",\n");
  const head = JSON.stringify(header, null, 2).replace(/\n}$/, "");
  fs.writeFileSync(file, head + ",\n  \"cases\": [\n" + body + "\n  ]\n}\n");
}

function spmReference(texts) {
  const version = execFileSync("spm_encode", ["--version"], { encoding: "utf8" }).trim();
  const usable = texts.filter((t) => !/[\n\r]/.test(t));
  const skipped = texts.filter((t) => /[\n\r]/.test(t));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "spm-ref-"));
  const input = path.join(dir, "input.txt");
  fs.writeFileSync(input, usable.join("\n") + "\n");
  const run = (model, format) => {
    const out = execFileSync("spm_encode", ["--model=" + model, "--output_format=" + format, input],
      { encoding: "utf8", maxBuffer: 1 << 26 });
    const lines = out.split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    if (lines.length !== usable.length) throw new Error("spm_encode gave " + lines.length + " lines for " + usable.length);
    return lines.map((l) => (l === "" ? [] : l.split(" ")));
  };
  const models = {};
  for (const name of ["unigram", "spm_bpe"]) {
    const model = path.join(FIXTURES, name + ".model");
    const ids = run(model, "id");
    const pieces = run(model, "piece");
    models[name] = {
      model: "fixture:" + name + ".model",
      cases: usable.map((text, i) => {
        if (ids[i].length !== pieces[i].length) throw new Error("ids/pieces mismatch for " + JSON.stringify(text));
        return { text, ids: ids[i].map(Number), pieces: pieces[i] };
      }),
    };
  }
  fs.rmSync(dir, { recursive: true });
  return { version, models, skipped };
}

async function main() {
  if (!fs.existsSync(path.join(FIXTURES, "unigram.model"))) {
    throw new Error("run from the repository root, after scripts/make-tokenizer-fixtures.py");
  }
  fs.mkdirSync(OUT, { recursive: true });
  const oracle = "tokenizers " + require("tokenizers/package.json").version;
  for (const t of TOKENIZERS) {
    const file = resolve(t);
    const tok = Tokenizer.fromFile(file);
    const cases = [];
    for (const text of TEXTS) cases.push(await encodeCase(tok, text, null));
    for (const [a, b] of PAIRS) cases.push(await encodeCase(tok, a, b));
    const header = { tokenizer: t.source, oracle };
    if (t.name === "gpt2") {
      header.composed = "gpt2";
      header.composition = GPT2_COMPOSITION;
      fs.rmSync(path.dirname(file), { recursive: true });
    }
    const out = path.join(OUT, t.name + ".json");
    writeCases(out, header, cases);
    console.log("wrote " + cases.length + " cases to " + out + " (" + fs.statSync(out).size + " bytes)");
  }

  const all = [];
  for (const s of TEXTS.concat(...PAIRS)) if (!all.includes(s)) all.push(s);
  const spm = spmReference(all);
  const out = path.join(OUT, "spm.json");
  const header = { tool: "spm_encode (" + spm.version + ")", skipped: spm.skipped };
  const parts = Object.entries(spm.models).map(([name, m]) =>
    "    " + JSON.stringify(name) + ": {\"model\": " + JSON.stringify(m.model) + ", \"cases\": [\n" +
    m.cases.map((c) => "      " + JSON.stringify(c)).join(",\n") + "\n    ]}");
  const head = JSON.stringify(header, null, 2).replace(/\n}$/, "");
  fs.writeFileSync(out, head + ",\n  \"models\": {\n" + parts.join(",\n") + "\n  }\n}\n");
  for (const [name, m] of Object.entries(spm.models)) {
    console.log("spm " + name + ": " + m.cases.length + " cases");
  }
  console.log("wrote " + out + " (" + fs.statSync(out).size + " bytes; skipped " + spm.skipped.length +
    " strings with line breaks)");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
