// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/transformer_family.h"

#include "attnscope/error.h"

namespace attnscope {

Embedded TransformerFamily::embed(const BatchInput& batch, const RunRequest&,
                                  const torch::Device& device) {
  return {embedIds(paddedIds(batch.tokens, batch.maxQuery).to(device)), {}};
}

std::vector<Token> TransformerFamily::tokenizeTarget(const std::string&) const {
  throw Error(ErrorKind::InvalidArgument, info().name + " has no decoder to give a target text");
}

Token TransformerFamily::decoderStartToken() const {
  throw Error(ErrorKind::InvalidArgument, info().name + " is not an encoder-decoder");
}

torch::Tensor TransformerFamily::decoderLayer(int, const torch::Tensor&, LayerContext&) {
  throw Error(ErrorKind::InvalidArgument, info().name + " is not an encoder-decoder");
}

Token TransformerFamily::vocabularyToken(int64_t id) const {
  Token t;
  t.id = id;
  t.label = "<id " + std::to_string(id) + ">";
  t.unknown = true;
  return t;
}

uint64_t TransformerFamily::activationBytesPerToken() const {
  // The residual stream, the normed copy, q, k, v, merged heads and the 4x-wide MLP hidden, with
  // room.
  return static_cast<uint64_t>(info().dModel) * 4 * 16;
}

std::vector<Token> TransformerFamily::tokenizePair(const std::string&, const std::string&) const {
  throw Error(ErrorKind::InvalidArgument, info().name + " takes one text, not a sentence pair");
}

void TransformerFamily::checkRequest(const RunRequest& request) const {
  const std::string name = info().name;
  if (request.pair && !info().supportsPair) {
    throw Error(
        ErrorKind::InvalidArgument,
        name + " takes one text: a sentence pair (--pair) needs an encoder with a pair template");
  }
  if (request.random) {
    throw Error(ErrorKind::InvalidArgument,
                name +
                    " reads text, not random input: give --text instead of "
                    "--batch/--seq-len (random input needs --model toy)");
  }
  if (request.context) {
    throw Error(
        ErrorKind::InvalidArgument,
        name +
            " has no cross-attention: leave out the context (cross-attention needs --model toy)");
  }
}

}  // namespace attnscope
