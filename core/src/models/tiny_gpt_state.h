// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "attnscope/tiny_gpt.h"
#include "models/tiny_gpt_modules.h"

namespace attnscope {

/// What a TinyGpt handle shares: the config, the vocabulary and the torch module.
struct TinyGpt::State {
  TinyGptConfig config;
  std::vector<std::string> vocab;                // id -> character (UTF-8)
  std::unordered_map<std::string, int64_t> ids;  // character -> id
  TinyGptModule module{nullptr};
  std::mutex mutex;  // serialises forward passes that share the module

  /// A state with untrained modules; throws Error for a bad config or a duplicated character.
  static std::shared_ptr<State> make(const TinyGptConfig& config, std::vector<std::string> vocab);

  /// One token per code point; characters outside the vocabulary are marked unknown and fed as
  /// a space (or id 0 when the vocabulary has none), so a run never fails on them.
  std::vector<Token> tokenize(const std::string& text) const;
  /// Token ids of a text, skipping characters outside the vocabulary (training, evaluation).
  /// int32 (vocab_size is at most 2^22) and no decoded copy of the text: a 100 MB corpus costs
  /// 400 MB of ids, not 30 times its size.
  std::vector<int32_t> encodeKnown(std::string_view text) const;
};

}  // namespace attnscope
