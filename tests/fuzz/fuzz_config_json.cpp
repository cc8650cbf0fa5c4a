// SPDX-License-Identifier: GPL-3.0-or-later
// Every config.json path of the base library on one input, as ConfigReader::fromFile reads it:
// the strict parser (duplicate keys and deep nesting refused), ConfigReader's typed getters, and
// the GPT-2 and decoder-family configs. Each accepts or throws a user Error; an accepted size is
// never a truncated, fractional or boolean value.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "io/strict_json.h"
#include "models/config_reader.h"
#include "models/gpt2_config.h"
#include "models/llama_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnscope;
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j;
  try {
    j = parseStrictJson(text, "fuzz", 64, /*invalidIsDiscarded=*/true);
  } catch (const Error& e) {
    if (!e.isUserError()) fuzz::fail(std::string("internal error: ") + e.what());
    return 0;  // a duplicate key or too deep: refused as promised
  }
  // The strict parser agrees with nlohmann on what is JSON at all.
  const bool plainValid = nlohmann::json::accept(text);
  if (j.is_discarded() == plainValid) fuzz::fail("strict and plain parsers disagree on validity");
  if (!j.is_object()) return 0;
  const ConfigReader reader(j, "fuzz");
  for (const char* key : {"n_layer", "hidden_size", "num_attention_heads", "vocab_size"}) {
    fuzz::expectOnlyUserErrors([&] {
      const int v = reader.integer({key}, 1, 1 << 20, 7);
      if (reader.has(key)) {
        const nlohmann::json& raw = j[key];
        // Only whole numbers in range, equal to what the file says: no truncation, no booleans.
        if (raw.is_boolean() || !raw.is_number() || raw.get<double>() != static_cast<double>(v))
          fuzz::fail(std::string("integer \"") + key + "\" accepted as " + std::to_string(v));
      } else if (v != 7) {
        fuzz::fail("a missing key did not give the fallback");
      }
    });
  }
  fuzz::expectOnlyUserErrors([&] { reader.flag("tie_word_embeddings", false); });
  fuzz::expectOnlyUserErrors([&] { reader.number("rms_norm_eps", 1e-6); });
  fuzz::expectOnlyUserErrors([&] {
    const Gpt2Config c = Gpt2Config::fromJson(text, "fuzz");
    if (c.nLayer <= 0 || c.nLayer > 1024 || c.nEmbd <= 0 || c.nEmbd > 65536 || c.nHead <= 0 ||
        c.nEmbd % c.nHead != 0 || c.nPositions <= 0 || c.nPositions > (1 << 20) ||
        c.vocabSize <= 0 || c.vocabSize > (1 << 22))
      fuzz::fail("accepted a GPT-2 config out of its stated ranges");
    if (c.parameterCount() == 0) fuzz::fail("an accepted GPT-2 config has no parameters");
  });
  fuzz::expectOnlyUserErrors([&] { LlamaConfig::fromReader(reader); });
  return 0;
}
