// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/encoder_decoder_family.h"

namespace attnscope {

ModelInfo EncoderDecoderFamily::encoderDecoderInfo(const std::string& kind, int layers,
                                                   int decoderLayers, int heads, int width,
                                                   int positions) const {
  ModelInfo i = folderInfo(kind, kind, layers, heads, heads, width, positions, false);
  i.decoderLayers = decoderLayers;
  return i;
}

std::vector<Token> EncoderDecoderFamily::tokenize(const std::string& text) const {
  std::vector<Token> tokens = encodeText(text, false);
  if (m_eos && !tokens.empty() && tokens.back().id != *m_eos) {
    Token eos = vocabularyToken(*m_eos);
    eos.special = true;
    eos.byteBegin = eos.byteEnd = text.size();
    tokens.push_back(std::move(eos));
  }
  return tokens;
}

std::vector<Token> EncoderDecoderFamily::tokenizeTarget(const std::string& text) const {
  std::vector<Token> tokens = encodeText(text, true);
  if (m_eos && !tokens.empty() && tokens.back().id == *m_eos && tokens.back().special)
    tokens.pop_back();
  return tokens;
}

Token EncoderDecoderFamily::decoderStartToken() const {
  Token t = vocabularyToken(m_start);
  t.special = true;
  return t;
}

}  // namespace attnscope
