// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "attnscope/attention_result.h"
#include "attnscope/run_request.h"
#include "attnscope/token.h"

namespace attnscope {

/// Tokenised texts of one request, ready to pad into a batch.
struct BatchInput {
  std::vector<std::vector<Token>> tokens;         // [batch][query]
  std::vector<std::vector<Token>> contextTokens;  // [batch][key], cross-attention only
  std::vector<int> queryLengths, keyLengths;
  int64_t maxQuery = 0, maxKey = 0;
  std::vector<std::string> notices;

  // Encoder-decoders: the decoder's inputs, the start token first ("decoder_self" and the rows of
  // "cross"; `tokens` are then the source).
  std::vector<std::vector<Token>> decoderTokens;  // [batch][target]
  std::vector<int> decoderLengths;                // [batch]
  int64_t maxDecoder = 0;
};

using TokenizeFn = std::function<std::vector<Token>(const std::string&)>;

/// Tokenises every text (and the context), rejecting empty or invalid texts and texts over
/// request.limits.maxTokens with Error(InvalidArgument / ResourceLimit). When maxPositions > 0 a
/// longer text keeps its last maxPositions tokens and a notice says exactly which window is shown.
BatchInput tokenizeBatch(const RunRequest& request, const TokenizeFn& tokenize,
                         int maxPositions = 0);

/// Encoder-decoders: every item's decoder input is `start` followed by the target's tokens
/// (request.target, the same for every item), or `start` alone without a target. A target is
/// checked like a text (valid UTF-8, not empty, at most request.limits.maxTokens tokens).
void addDecoderInputs(BatchInput& batch, const RunRequest& request, const Token& start,
                      const TokenizeFn& tokenizeTarget);
/// Appends one token to item b's decoder input, keeping the lengths in step.
void appendDecoderToken(BatchInput& batch, std::size_t b, Token token);

/// [B, T] int64 ids of the tokens, right-padded with id 0 (on the CPU).
torch::Tensor paddedIds(const std::vector<std::vector<Token>>& tokens, int64_t T);

/// Hands the tokens, lengths and notices of a batch to the result that was computed from it: the
/// main group's, and for an encoder-decoder also "decoder_self" (decoder inputs on both axes) and
/// "cross" (decoder inputs on the rows, the source on the columns).
void moveTokensInto(BatchInput&& batch, AttentionResult& result);

/// Positions x0..x{seqLen-1} for random input (the toy layer's N(0, 1) X), every item the same.
/// Throws Error(InvalidArgument) for non-positive sizes, Error(ResourceLimit) past
/// limits.maxTokens.
BatchInput randomBatch(const RandomInput& random, const RunLimits& limits);

/// Zeroes rows of padded queries in [L?, B, H, Tq, Tk] / [B, Tq, C] style tensors whose batch axis
/// is batchAxis and query axis is queryAxis.
void zeroPaddedQueries(torch::Tensor& t, const std::vector<int>& queryLengths, int batchAxis,
                       int queryAxis);

/// Throws Error(ResourceLimit) "<what> needs about X GiB, more than the limit of Y GiB" when the
/// estimate is over the limit.
void checkMemory(uint64_t estimateBytes, uint64_t limitBytes, const std::string& what);
std::string formatBytes(uint64_t bytes);

/// Throws Error(Cancelled) when the request's cancel flag is set.
void throwIfCancelled(const RunRequest& request);

}  // namespace attnscope
