// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attnscope {

/// Typed, checked access to a Hugging Face config.json, so every family reads its fields the same
/// way: integers are whole numbers in range (no fractions, no booleans), and a message names the
/// file and the field ("config.json: \"hidden_size\" must be a whole number from 1 to 1048576,
/// got 64.5").
class ConfigReader final {
 public:
  /// Throws Error(Io) when unreadable, Error(Format) when the text does not parse (naming the byte
  /// and line) or is not a JSON object.
  static ConfigReader fromFile(const std::string& path);
  ConfigReader(nlohmann::json json, std::string source);

  /// The first of the keys that is present (configs name fields differently: "dim" or
  /// "hidden_size"); throws when none is and no fallback is given.
  int integer(const std::vector<std::string>& keys, int min, int max) const;
  int integer(const std::vector<std::string>& keys, int min, int max, int fallback) const;
  double number(const std::string& key, double fallback) const;
  std::string string(const std::string& key, const std::string& fallback) const;
  bool flag(const std::string& key, bool fallback) const;
  bool has(const std::string& key) const;
  /// A nested object ("rope_scaling") read the same way, its messages naming "file: key.field".
  /// Throws when present and not an object; has(key) tells whether it is present.
  ConfigReader section(const std::string& key) const;
  /// Throws "<divisorKey> (4) must divide <key> (30)" unless divisor divides value: a size that
  /// is split evenly (a width into heads, layers into groups).
  void requireDivides(const std::string& divisorKey, int divisor, const std::string& key,
                      int value) const;
  /// Throws "\"<key>\" (999999) must be below <limitKey> (32128)" unless value < limit: a token
  /// id that indexes the embedding table.
  void requireBelow(const std::string& key, int value, const std::string& limitKey,
                    int limit) const;
  const std::string& source() const { return m_source; }
  /// The object as parsed, for a reader that words its own messages (Gpt2Config).
  const nlohmann::json& json() const { return m_json; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  const nlohmann::json* find(const std::vector<std::string>& keys, std::string* found) const;
  nlohmann::json m_json;
  std::string m_source;
};

/// A number as a person writes it in a message: "1e+308", "10000", "0.5" (%g), not
/// std::to_string's 309 digits or six decimals.
std::string formatNumber(double value);

/// The largest rotary base (rope_theta, rotary_emb_base) a config may give: the frequencies are
/// float32 as in transformers, and the dynamic scaling multiplies the base further.
constexpr double kMaxRopeBase = 1e30;

}  // namespace attnscope
