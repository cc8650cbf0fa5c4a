// SPDX-License-Identifier: GPL-3.0-or-later
// Tiny-GPT checkpoints: safetensors whose __metadata__ carries the config and the vocabulary.
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>

#include "attnscope/error.h"
#include "attnscope/safetensors.h"
#include "attnscope/tiny_gpt.h"
#include "attnscope/utf8.h"
#include "io/safetensors_checkpoint.h"
#include "io/strict_json.h"
#include "models/config_reader.h"
#include "models/tiny_gpt_state.h"
#include "models/weight_loader.h"
#include "nn/state_dict.h"

namespace attnscope {
namespace {

std::string metadataOr(const std::map<std::string, std::string>& m, const std::string& key,
                       const std::string& path) {
  const auto it = m.find(key);
  if (it == m.end()) {
    throw Error(ErrorKind::Format,
                path + ": not a tiny-gpt checkpoint (no '" + key + "' in __metadata__)");
  }
  return it->second;
}

// Ranges of the tiny GPT's sizes (TinyGptConfig::validate says the same).
constexpr int kMaxLayers = 64, kMaxHeads = 256, kMaxEmbd = 8192, kMaxBlock = 65536,
              kMaxVocab = 1 << 22;

// One character (code point) per entry: the tiny GPT tokenizes text one character at a time, so
// "ab" could never be produced, "" would match nothing and NUL is no character of a text.
void checkVocabularyEntry(const std::string& entry, std::size_t index, const std::string& source) {
  const auto bad = [&](const std::string& why) {
    throw Error(ErrorKind::Format, source + ": entry " + std::to_string(index) + " " + why);
  };
  if (entry.empty()) bad("is empty; each entry must be one character");
  if (!isValidUtf8(entry)) bad("is not valid UTF-8");
  if (decodeUtf8(entry).size() != 1)
    bad("\"" + readableLabel(entry) + "\" is more than one character");
  if (entry[0] == '\0') bad("is the NUL character");
}

// The tensors a config implies, checked in the header before the model exists.
void checkShapes(const SafetensorsCheckpoint& ck, const TinyGptConfig& c, const std::string& why) {
  const int64_t C = c.nEmbd, V = c.vocabSize, T = c.blockSize, hd = c.nEmbd / c.nHead;
  ck.requireShape("token_embedding_table.weight", {V, C}, why);
  ck.requireShape("position_embedding_table.weight", {T, C}, why);
  ck.requireShape("lm_head.weight", {V, C}, why);
  const std::string last = "blocks." + std::to_string(c.nLayer - 1) + ".";
  ck.requireShape(last + "ln1.weight", {C}, why);
  ck.requireShape(last + "ffwd.net.0.weight", {4 * C, C}, why);
  ck.requireShape(last + "sa.heads." + std::to_string(c.nHead - 1) + ".key.weight", {hd, C}, why);
  ck.requireAbsent(last + "sa.heads." + std::to_string(c.nHead) + ".key.weight", why);
  ck.requireAbsent("blocks." + std::to_string(c.nLayer) + ".ln1.weight", why);
}

}  // namespace

TinyGpt TinyGpt::load(const std::string& path) {
  const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::openFile(path);
  const auto& meta = checkpoint.metadata();
  if (metadataOr(meta, "attnscope.kind", path) != "tiny-gpt") {
    throw Error(ErrorKind::Format,
                path + ": attnscope.kind is '" + meta.at("attnscope.kind") + "', not 'tiny-gpt'");
  }
  TinyGptConfig c;
  std::vector<std::string> vocab;
  {
    // Strict: 4294967300, 64.7 and true are refused, not truncated to 4, 64 and 1; a key given
    // twice is refused, not resolved to the last.
    const std::string source = path + ": attnscope.config";
    nlohmann::json j = parseStrictJson(metadataOr(meta, "attnscope.config", path), source);
    if (!j.is_object()) throw Error(ErrorKind::Format, source + ": not a JSON object");
    const ConfigReader cfg(std::move(j), source);
    c.nLayer = cfg.integer({"n_layer"}, 1, kMaxLayers);
    c.nHead = cfg.integer({"n_head"}, 1, kMaxHeads);
    c.nEmbd = cfg.integer({"n_embd"}, 1, kMaxEmbd);
    c.blockSize = cfg.integer({"block_size"}, 1, kMaxBlock);
    c.vocabSize = cfg.integer({"vocab_size"}, 1, kMaxVocab);
    const std::string vocabSource = path + ": attnscope.vocab";
    const nlohmann::json v =
        parseStrictJson(metadataOr(meta, "attnscope.vocab", path), vocabSource);
    if (!v.is_array()) throw Error(ErrorKind::Format, vocabSource + ": not a JSON array");
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string())
        throw Error(ErrorKind::Format, vocabSource + ": entry " + std::to_string(i) +
                                           " is not a string: " + v[i].dump());
      vocab.push_back(v[i].get<std::string>());
      checkVocabularyEntry(vocab.back(), i, vocabSource);
    }
  }
  if (static_cast<int>(vocab.size()) != c.vocabSize) {
    throw Error(ErrorKind::Format, path + ": vocab_size is " + std::to_string(c.vocabSize) +
                                       " but the vocabulary has " + std::to_string(vocab.size()) +
                                       " characters");
  }
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(ErrorKind::Format, path + ": " + e.what());
  }
  // The shapes in the header must match the config before anything is allocated: a config that
  // says 2^20 layers is refused here, not after building them.
  checkShapes(checkpoint, c, path + ": attnscope.config (" + c.describe() + ")");
  std::shared_ptr<State> s;
  try {
    s = TinyGpt::State::make(c, vocab);
  } catch (const Error& e) {
    throw Error(ErrorKind::Format, path + ": " + e.what());
  }
  WeightRules rules;
  rules.family = "tiny GPT";
  // The chapter's Head registers its causal mask as a buffer `tril`: not a weight.
  rules.ignoredSuffixes = {".tril"};
  // Training writes the weights, so they are float32 copies, not views of the read-only file.
  rules.mapWeights = false;
  try {
    loadWeights(*s->module, checkpoint, rules, c.describe());
  } catch (const Error& e) {
    throw Error(ErrorKind::Format, path + ": " + e.what());
  }
  return TinyGpt(s);
}

TinyGpt TinyGpt::open(const std::string& source) {
  if (source != "default") return load(source);
  const std::string path = defaultModelPath();
  if (path.empty()) {
    throw Error(ErrorKind::Unavailable,
                "the bundled model resources/models/tiny-shakespeare.safetensors was not found "
                "(set ATTNSCOPE_DEFAULT_MODEL to its path)");
  }
  return load(path);
}

void TinyGpt::save(const std::string& path) const {
  const TinyGptConfig& c = m_state->config;
  const nlohmann::json cfg = {{"n_layer", c.nLayer},
                              {"n_head", c.nHead},
                              {"n_embd", c.nEmbd},
                              {"block_size", c.blockSize},
                              {"vocab_size", c.vocabSize}};
  std::lock_guard<std::mutex> lock(m_state->mutex);
  writeSafetensors(path, stateDict(*m_state->module),
                   {{"attnscope.kind", "tiny-gpt"},
                    {"attnscope.config", cfg.dump()},
                    {"attnscope.vocab", nlohmann::json(m_state->vocab).dump()}});
}

std::string defaultModelPath() {
  namespace fs = std::filesystem;
  const char* name = "tiny-shakespeare.safetensors";
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("ATTNSCOPE_DEFAULT_MODEL")) candidates.emplace_back(env);
  // Next to the executable: <prefix>/bin/../share/attnscope/models when installed; in a build
  // tree the executables sit one to three folders below <build>/share (see resources/).
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    fs::path dir = fs::path(exe).parent_path();
    for (int up = 0; up < 4 && !dir.empty(); ++up, dir = dir.parent_path()) {
      candidates.push_back(dir / "share/attnscope/models" / name);
      candidates.push_back(dir / "../share/attnscope/models" / name);
      if (dir == dir.parent_path()) break;
    }
  }
  for (const fs::path& p : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return {};
}

}  // namespace attnscope
