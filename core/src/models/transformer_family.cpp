// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/transformer_family.h"

#include "attnscope/error.h"

namespace attnscope {

Embedded TransformerFamily::embed(const BatchInput& batch, const RunRequest&,
                                  const torch::Device& device) {
  const int64_t B = static_cast<int64_t>(batch.tokens.size()), T = batch.maxQuery;
  torch::Tensor ids = torch::zeros({B, T}, torch::kLong);  // right-padded with id 0
  auto idAt = ids.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<Token>& tokens = batch.tokens[static_cast<std::size_t>(b)];
    for (std::size_t t = 0; t < tokens.size(); ++t) idAt[b][static_cast<int64_t>(t)] = tokens[t].id;
  }
  return {embedIds(ids.to(device)), {}};
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
