// SPDX-License-Identifier: GPL-3.0-or-later
#include "file_reader.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "attnscope/error.h"
#include "attnscope/utf8.h"

namespace attnscope::cli {

std::string readTextFile(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, flag + ": cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  requireValidUtf8(text, path);
  return text;
}

}  // namespace attnscope::cli
