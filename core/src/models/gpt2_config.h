// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace attnscope {

/// The hyper-parameters of a GPT-2 checkpoint, read from a Hugging Face config.json.
struct Gpt2Config {
  int nLayer = 12;
  int nHead = 12;
  int nEmbd = 768;
  int nPositions = 1024;  // also accepted as n_ctx
  int vocabSize = 50257;
  double layerNormEpsilon = 1e-5;

  int headDim() const { return nEmbd / nHead; }

  /// Parses config.json. Throws Error(Io) when unreadable, Error(Format) naming the file and the
  /// field when a value is missing, of the wrong type or inconsistent ("n_head (5) must divide
  /// n_embd (32)").
  static Gpt2Config fromFile(const std::string& path);
  static Gpt2Config fromJson(const std::string& text, const std::string& source);
};

}  // namespace attnscope
