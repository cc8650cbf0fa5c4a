// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

// The independent checks: the system Python (with NumPy / PyTorch when installed) reads what we
// write and writes what we read. Tests skip when the module is missing, except under CI=true,
// where a check that cannot run fails (ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE).
namespace attnscope::test {

inline const char* kPython = "/usr/bin/python3";

inline bool pythonHasModule(const std::string& module) {
  const std::string cmd = std::string(kPython) + " -c 'import " + module + "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

/// Under CI=true a reference check may not skip: a CI machine without python3-torch would pass
/// without checking what the test exists to check.
inline bool referenceChecksMustRun() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
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

/// In a test body: skips (fails under CI=true) where /usr/bin/python3 lacks the module.
#define ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE(module)                                  \
  do {                                                                                \
    if (!::attnscope::test::pythonHasModule(module)) {                                \
      if (::attnscope::test::referenceChecksMustRun())                                \
        FAIL() << "/usr/bin/python3 has no " << (module)                              \
               << ", and a reference check cannot be skipped under CI=true (install " \
                  "python3-torch python3-numpy: scripts/install-deps.sh)";            \
      GTEST_SKIP() << "/usr/bin/python3 has no " << (module);                         \
    }                                                                                 \
  } while (0)
