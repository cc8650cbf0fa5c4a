// SPDX-License-Identifier: GPL-3.0-or-later
#include "hub_settings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "attnscope/error.h"
#include "attnscope/model_catalog.h"

namespace attnscope::hub {
namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// huggingface_hub's truth values (constants._is_true).
bool isTrue(std::string value) {
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return value == "1" || value == "ON" || value == "YES" || value == "TRUE";
}

std::string trimmed(const std::string& s) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  const auto begin = std::find_if_not(s.begin(), s.end(), space);
  const auto end = std::find_if_not(s.rbegin(), s.rend(), space).base();
  return begin < end ? std::string(begin, end) : std::string();
}

int seconds(const char* name, int fallbackMs) {
  const std::string value = environment(name);
  if (value.empty()) return fallbackMs;
  char* end = nullptr;
  const double s = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || !(s > 0) || s > 86400)
    throw Error(ErrorKind::InvalidArgument,
                std::string(name) + " must be a number of seconds, got '" + value + "'");
  return static_cast<int>(s * 1000);
}

// The token `hf auth login` stores: $HF_TOKEN_PATH, else $HF_HOME/token, else
// ~/.cache/huggingface/token (XDG_CACHE_HOME moves ~/.cache, as in huggingface_hub).
std::string storedToken() {
  namespace fs = std::filesystem;
  fs::path path = environment("HF_TOKEN_PATH");
  if (path.empty()) {
    fs::path home = environment("HF_HOME");
    if (home.empty()) {
      const std::string xdg = environment("XDG_CACHE_HOME");
      const std::string user = environment("HOME");
      if (!xdg.empty())
        home = fs::path(xdg) / "huggingface";
      else if (!user.empty())
        home = fs::path(user) / ".cache" / "huggingface";
    }
    if (home.empty()) return {};
    path = home / "token";
  }
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) > 4096) return {};
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return trimmed(text.str());
}

}  // namespace

HubSettings HubSettings::fromEnvironment() {
  HubSettings s;
  std::string endpoint = trimmed(environment("HF_ENDPOINT"));
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  if (!endpoint.empty()) {
    if (endpoint.rfind("https://", 0) != 0 && endpoint.rfind("http://", 0) != 0)
      throw Error(ErrorKind::InvalidArgument,
                  "HF_ENDPOINT must start with https:// or http://, got '" + endpoint + "'");
    s.endpoint = endpoint;
  }
  s.token = trimmed(environment("HF_TOKEN"));
  if (s.token.empty()) s.token = trimmed(environment("HUGGING_FACE_HUB_TOKEN"));  // the old name
  if (s.token.empty()) s.token = storedToken();
  // The token itself is never part of a message, not even this one.
  if (s.token.find_first_of("\r\n") != std::string::npos)
    throw Error(ErrorKind::InvalidArgument,
                "HF_TOKEN holds a line break; set it to the token alone");
  s.offline = isTrue(environment("HF_HUB_OFFLINE")) || isTrue(environment("TRANSFORMERS_OFFLINE"));
  const std::vector<std::string> caches = huggingFaceCacheDirs();
  if (!caches.empty()) s.cacheDir = caches.front();
  s.metadataTimeoutMs = seconds("HF_HUB_ETAG_TIMEOUT", s.metadataTimeoutMs);
  s.transferTimeoutMs = seconds("HF_HUB_DOWNLOAD_TIMEOUT", s.transferTimeoutMs);
  return s;
}

}  // namespace attnscope::hub
