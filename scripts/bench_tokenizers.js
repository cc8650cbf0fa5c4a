#!/usr/bin/env node
// SPDX-License-Identifier: GPL-3.0-or-later
// The oracle side of attnscope-bench's BM_TokenizeHf* rows: Hugging Face's `tokenizers` (the npm
// package, 0.23.x) timing Tokenizer.fromFile(path).encode(text) on the same 1 MB of text
// (bench_support.cpp's corpusText: tinyshakespeare repeated to 1 MiB, cut back to ASCII), one
// call on the whole text, repeated. Prints JSON to stdout:
//   {"llama3": {"ms": median, "best_ms": .., "cpu_ms": median CPU, "runs": n, "tokens": n, ...},
//    "wordpiece": {...}, "__context__": {"tokenizers": "0.23.2", "node": "v18..."}}
// A tokenizer whose file is missing gets {"error": "..."}; without the package every entry does.
//
//   node scripts/bench_tokenizers.js [--modules DIR] [--runs N] [--out FILE]
// DIR is a node_modules folder holding `tokenizers` (default: the usual resolution). One thread:
// RAYON_NUM_THREADS=1 and TOKENIZERS_PARALLELISM=false are set here unless the caller set them.
'use strict';

process.env.RAYON_NUM_THREADS = process.env.RAYON_NUM_THREADS || '1';
process.env.TOKENIZERS_PARALLELISM = process.env.TOKENIZERS_PARALLELISM || 'false';

const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const TEXT_BYTES = 1 << 20;
const FILES = {
  llama3: path.resolve(root, '..', 'shared', 'data', 'tokenizers', 'llama3', 'tokenizer.json'),
  wordpiece: path.join(root, 'tests', 'data', 'tokenizers', 'wordpiece.json'),
};

function parseArgs(argv) {
  const args = { modules: null, runs: 7, out: null };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a === '--modules') args.modules = argv[++i];
    else if (a === '--runs') args.runs = Math.max(1, parseInt(argv[++i], 10) || 1);
    else if (a === '--out') args.out = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

/// bench_support.cpp's corpusText(bytes), byte for byte.
function corpusText(bytes) {
  let base;
  try {
    base = fs.readFileSync(path.resolve(root, '..', 'shared', 'data', 'tinyshakespeare.txt'));
  } catch (e) {
    base = Buffer.alloc(0);
  }
  if (base.length === 0) {
    base = Buffer.from('The quick brown fox jumps over the lazy dog, and then it rests.\n');
  }
  const parts = [];
  let size = 0;
  while (size < bytes) {
    parts.push(base);
    size += base.length;
  }
  let end = bytes;
  const all = Buffer.concat(parts, size);
  while (end > 0 && (all[end - 1] & 0x80)) --end;  // back to an ASCII boundary
  return all.subarray(0, end).toString('utf8');
}

function loadPackage(modules) {
  const name = modules ? path.join(path.resolve(modules), 'tokenizers') : 'tokenizers';
  const mod = require(name);
  let version = '?';
  try {
    const pkg = modules ? path.join(path.resolve(modules), 'tokenizers', 'package.json')
                        : require.resolve('tokenizers/package.json');
    version = JSON.parse(fs.readFileSync(pkg, 'utf8')).version;
  } catch (e) {
    // version stays unknown
  }
  return { Tokenizer: mod.Tokenizer, version };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function timeOne(Tokenizer, file, text, runs) {
  if (!fs.existsSync(file)) return { error: `not found: ${file}` };
  const tokenizer = Tokenizer.fromFile(file);
  // encode() returns a Promise; the work runs on one libuv worker thread. One warm-up call.
  const first = await tokenizer.encode(text);
  const tokens = first.getLength();
  const wall = [];
  const cpu = [];
  for (let i = 0; i < runs; ++i) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const enc = await tokenizer.encode(text);
    const t1 = process.hrtime.bigint();
    const c = process.cpuUsage(c0);
    if (enc.getLength() !== tokens) throw new Error(`${file}: token count changed between runs`);
    wall.push(Number(t1 - t0) / 1e6);
    cpu.push((c.user + c.system) / 1e3);
  }
  const ms = median(wall);
  return {
    ms,
    best_ms: Math.min(...wall),
    cpu_ms: median(cpu),
    runs,
    tokens,
    bytes: Buffer.byteLength(text, 'utf8'),
    bytes_per_second: Buffer.byteLength(text, 'utf8') / (ms / 1e3),
    file,
  };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const result = { __context__: { node: process.version } };
  let pkg = null;
  try {
    pkg = loadPackage(args.modules);
    result.__context__.tokenizers = pkg.version;
  } catch (e) {
    const why = `the tokenizers npm package is not installed (${String(e.message).split('\n')[0]})`;
    for (const name of Object.keys(FILES)) result[name] = { error: why };
  }
  if (pkg) {
    const text = corpusText(TEXT_BYTES);
    for (const [name, file] of Object.entries(FILES)) {
      try {
        result[name] = await timeOne(pkg.Tokenizer, file, text, args.runs);
      } catch (e) {
        result[name] = { error: String(e.message || e).split('\n')[0] };
      }
      process.stderr.write(`${name}: ${JSON.stringify(result[name])}\n`);
    }
  }
  const json = JSON.stringify(result, null, 1) + '\n';
  if (args.out) fs.writeFileSync(args.out, json);
  else process.stdout.write(json);
}

main().catch((e) => {
  process.stderr.write(`bench_tokenizers.js: ${e.stack || e}\n`);
  process.exit(1);
});
