// SPDX-License-Identifier: GPL-3.0-or-later
#include "arg_parser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace attnscope::cli {

ArgParser::ArgParser(std::string command, std::string summary)
    : m_command(std::move(command)), m_summary(std::move(summary)) {}

ArgParser& ArgParser::option(const std::string& name, const std::string& valueName,
                             const std::string& help, bool repeatable) {
  m_order.push_back(name);
  m_specs[name] = {valueName, help, true, repeatable};
  return *this;
}

ArgParser& ArgParser::flag(const std::string& name, const std::string& help) {
  m_order.push_back(name);
  m_specs[name] = {"", help, false, false};
  return *this;
}

void ArgParser::parse(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::string inlineValue;
    bool hasInline = false;
    if (name == "-h" || name == "--help") {
      m_help = true;
      continue;
    }
    if (name.rfind("--", 0) != 0) {
      throw UsageError("unexpected argument '" + name + "' (flags start with --; see " + m_command +
                       " --help)");
    }
    if (const auto eq = name.find('='); eq != std::string::npos) {
      inlineValue = name.substr(eq + 1);
      name = name.substr(0, eq);
      hasInline = true;
    }
    const auto spec = m_specs.find(name);
    if (spec == m_specs.end()) {
      throw UsageError("unknown flag " + name + " (see " + m_command + " --help)");
    }
    if (!spec->second.repeatable && m_values.count(name)) {
      throw UsageError(name + " given twice");
    }
    if (!spec->second.takesValue) {
      if (hasInline) throw UsageError(name + " takes no value");
      m_values[name].push_back("");
      continue;
    }
    if (!hasInline) {
      if (i + 1 >= args.size())
        throw UsageError(name + " needs a value (" + spec->second.valueName + ")");
      inlineValue = args[++i];
    }
    m_values[name].push_back(inlineValue);
  }
}

std::string ArgParser::help() const {
  std::string out = "usage: " + m_command + " [flags]\n" + m_summary + "\n\nflags:\n";
  for (const std::string& name : m_order) {
    const Spec& s = m_specs.at(name);
    std::string left = "  " + name + (s.takesValue ? " " + s.valueName : "");
    if (left.size() < 28)
      left.resize(28, ' ');
    else
      left += "\n" + std::string(28, ' ');
    out += left + s.help + (s.repeatable ? " (repeatable)" : "") + "\n";
  }
  out += "  --help                    show this help\n";
  return out;
}

std::string ArgParser::value(const std::string& name, const std::string& fallback) const {
  const auto it = m_values.find(name);
  return it == m_values.end() ? fallback : it->second.back();
}

std::vector<std::string> ArgParser::values(const std::string& name) const {
  const auto it = m_values.find(name);
  return it == m_values.end() ? std::vector<std::string>{} : it->second;
}

long long ArgParser::integer(const std::string& name, long long fallback, long long min,
                             long long max) const {
  if (!has(name)) return fallback;
  const std::string v = value(name);
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE) {
    throw UsageError(name + " expects a whole number, got '" + v + "'");
  }
  if (n < min || n > max) {
    throw UsageError(name + " must be between " + std::to_string(min) + " and " +
                     std::to_string(max) + ", got " + v);
  }
  return n;
}

double ArgParser::number(const std::string& name, double fallback, double min, double max) const {
  if (!has(name)) return fallback;
  const std::string v = value(name);
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x)) {
    throw UsageError(name + " expects a number, got '" + v + "'");
  }
  if (x < min || x > max) {
    throw UsageError(name + " must be between " + std::to_string(min) + " and " +
                     std::to_string(max) + ", got " + v);
  }
  return x;
}

}  // namespace attnscope::cli
