// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/config_reader.h"

#include <cmath>
#include <cstdio>

#include "attnscope/error.h"
#include "io/file_io.h"
#include "io/strict_json.h"

namespace attnscope {

ConfigReader ConfigReader::fromFile(const std::string& path) {
  // Strict: a key given twice is refused instead of silently taking its last value. Text that
  // does not parse (a truncated download) is a parse error with its place, not "not an object".
  nlohmann::json j = parseStrictJson(readFile(path, kMaxConfigBytes), path, 64);
  if (!j.is_object()) throw Error(ErrorKind::Format, path + ": not a JSON object");
  return ConfigReader(std::move(j), path);
}

ConfigReader::ConfigReader(nlohmann::json json, std::string source)
    : m_json(std::move(json)), m_source(std::move(source)) {}

void ConfigReader::fail(const std::string& what) const {
  throw Error(ErrorKind::Format, m_source + ": " + what);
}

void ConfigReader::requireDivides(const std::string& divisorKey, int divisor,
                                  const std::string& key, int value) const {
  if (value % divisor != 0)
    fail(divisorKey + " (" + std::to_string(divisor) + ") must divide " + key + " (" +
         std::to_string(value) + ")");
}

std::string formatNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

void ConfigReader::requireBelow(const std::string& key, int value, const std::string& limitKey,
                                int limit) const {
  if (value >= limit)
    fail("\"" + key + "\" (" + std::to_string(value) + ") must be below " + limitKey + " (" +
         std::to_string(limit) + ")");
}

bool ConfigReader::has(const std::string& key) const {
  return m_json.contains(key) && !m_json[key].is_null();
}

ConfigReader ConfigReader::section(const std::string& key) const {
  if (!has(key)) return ConfigReader(nlohmann::json::object(), m_source + ": " + key);
  if (!m_json[key].is_object())
    fail("\"" + key + "\" must be an object, got " + m_json[key].dump());
  return ConfigReader(m_json[key], m_source + ": " + key);
}

const nlohmann::json* ConfigReader::find(const std::vector<std::string>& keys,
                                         std::string* found) const {
  for (const std::string& k : keys) {
    if (has(k)) {
      *found = k;
      return &m_json[k];
    }
  }
  return nullptr;
}

int ConfigReader::integer(const std::vector<std::string>& keys, int min, int max) const {
  std::string key;
  const nlohmann::json* v = find(keys, &key);
  if (!v) fail("missing \"" + keys.front() + "\"");
  // Whole numbers only: 64.0 is accepted as JSON writes it, 64.5 and true are not.
  const bool whole = v->is_number_integer() ||
                     (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>());
  const double d = whole ? v->get<double>() : 0;
  if (!whole || d < min || d > max) {
    fail("\"" + key + "\" must be a whole number from " + std::to_string(min) + " to " +
         std::to_string(max) + ", got " + v->dump());
  }
  return static_cast<int>(d);
}

int ConfigReader::integer(const std::vector<std::string>& keys, int min, int max,
                          int fallback) const {
  std::string key;
  return find(keys, &key) ? integer(keys, min, max) : fallback;
}

double ConfigReader::number(const std::string& key, double fallback) const {
  if (!has(key)) return fallback;
  if (!m_json[key].is_number()) fail("\"" + key + "\" must be a number, got " + m_json[key].dump());
  return m_json[key].get<double>();
}

std::string ConfigReader::string(const std::string& key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  if (!m_json[key].is_string()) fail("\"" + key + "\" must be a string, got " + m_json[key].dump());
  return m_json[key].get<std::string>();
}

bool ConfigReader::flag(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!m_json[key].is_boolean())
    fail("\"" + key + "\" must be true or false, got " + m_json[key].dump());
  return m_json[key].get<bool>();
}

}  // namespace attnscope
