// SPDX-License-Identifier: GPL-3.0-or-later
#include "command_line.h"

namespace attnscope::gui {

std::vector<std::string> sessionSafeArguments(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--session" || arg == "-session") && i + 1 < argc) {
      out.push_back("--session=" + std::string(argv[++i]));
    } else {
      out.push_back(arg);
    }
  }
  return out;
}

}  // namespace attnscope::gui
