// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

// The independent checks: the system Python (with NumPy / PyTorch when installed) reads what we
// write and writes what we read. Tests skip when the module is missing.
namespace attnscope::test {

inline const char* kPython = "/usr/bin/python3";

inline bool pythonHasModule(const std::string& module) {
  const std::string cmd = std::string(kPython) + " -c 'import " + module + "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

struct PythonResult {
  int exitCode = -1;
  std::string output;  // stdout and stderr together
};

/// Writes `script` to `scriptPath` and runs it with the arguments (which must not need quoting).
inline PythonResult runPython(const std::string& scriptPath, const std::string& script,
                              const std::string& args) {
  std::ofstream(scriptPath) << script;
  const std::string cmd = std::string(kPython) + " " + scriptPath + " " + args + " 2>&1";
  PythonResult result;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace attnscope::test
