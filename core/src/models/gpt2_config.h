// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

#include "models/config_reader.h"

namespace attnscope {

class SafetensorsCheckpoint;

/// The hyper-parameters of a GPT-2 checkpoint, read from a Hugging Face config.json.
struct Gpt2Config {
  int nLayer = 12;
  int nHead = 12;
  int nEmbd = 768;
  int nPositions = 1024;  // also accepted as n_ctx
  int vocabSize = 50257;
  double layerNormEpsilon = 1e-5;
  std::string activation = "gelu_new";      // activation_function: any name parseActivation knows
  int nInner = 0;                           // MLP width; 0: 4 * n_embd
  bool scaleAttnWeights = true;             // scores / sqrt(head_dim)
  bool scaleAttnByInverseLayerIdx = false;  // and / (layer index + 1)

  int headDim() const { return nEmbd / nHead; }
  int innerDim() const { return nInner > 0 ? nInner : 4 * nEmbd; }

  /// Parses config.json. Throws Error(Io) when unreadable, Error(Format) naming the file and the
  /// field when a value is missing, of the wrong type or inconsistent ("n_head (5) must divide
  /// n_embd (32)").
  static Gpt2Config fromFile(const std::string& path);
  static Gpt2Config fromJson(const std::string& text, const std::string& source);
  /// The same from a config.json already read (the GPT-2 family's FolderFamily reads it once).
  static Gpt2Config fromReader(const ConfigReader& reader);

  /// Parameters the config implies, for the memory estimate before anything is built.
  uint64_t parameterCount() const;
  /// From the checkpoint's headers, before the model is built: the embedding tables, the last
  /// layer and no layer beyond it must have the shapes the config implies, so a config saying
  /// n_layer 2^20 or n_positions 2^20 is refused at once. Throws Error(Format).
  void checkShapes(const SafetensorsCheckpoint& checkpoint, const std::string& source) const;
};

}  // namespace attnscope
