// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnscope::cli {

/// A bad command line: the message names the flag or value, and the CLI exits with code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Declares the flags of one subcommand, parses them strictly and converts values with messages
/// that name the flag ("--heads expects a whole number, got 'four'").
class ArgParser final {
 public:
  ArgParser(std::string command, std::string summary);

  /// A flag taking a value; `repeatable` flags collect every occurrence.
  ArgParser& option(const std::string& name, const std::string& valueName, const std::string& help,
                    bool repeatable = false);
  /// A flag without a value.
  ArgParser& flag(const std::string& name, const std::string& help);

  /// Throws UsageError for unknown flags, missing values and repeated single flags.
  void parse(const std::vector<std::string>& args);
  bool helpRequested() const { return m_help; }
  std::string help() const;

  bool has(const std::string& name) const { return m_values.count(name) > 0; }
  std::string value(const std::string& name, const std::string& fallback = "") const;
  std::vector<std::string> values(const std::string& name) const;
  /// Whole number within [min, max]; throws UsageError naming the flag otherwise.
  long long integer(const std::string& name, long long fallback, long long min,
                    long long max) const;
  double number(const std::string& name, double fallback, double min, double max) const;

 private:
  struct Spec {
    std::string valueName, help;
    bool takesValue = true, repeatable = false;
  };
  std::string m_command, m_summary;
  std::vector<std::string> m_order;
  std::map<std::string, Spec> m_specs;
  std::map<std::string, std::vector<std::string>> m_values;
  bool m_help = false;
};

}  // namespace attnscope::cli
