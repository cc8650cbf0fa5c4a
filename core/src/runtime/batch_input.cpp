// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/batch_input.h"

#include <algorithm>
#include <cstdio>

#include "attnscope/error.h"
#include "attnscope/utf8.h"

namespace attnscope {
namespace {

std::vector<Token> tokenizeOne(const std::string& text, const std::string& what,
                               const RunRequest& request, const TokenizeFn& tokenize,
                               int maxPositions, std::vector<std::string>& notices) {
  requireValidUtf8(text, what);
  std::vector<Token> tokens = tokenize(text);
  // Encoders add [CLS] and [SEP] to any text: when every token is one inserted so (special, no
  // bytes of the text), there is no text to look at.
  const bool onlyInserted = std::all_of(tokens.begin(), tokens.end(), [](const Token& t) {
    return t.special && t.byteBegin == t.byteEnd;
  });
  if (onlyInserted) throw Error(ErrorKind::InvalidArgument, what + " is empty: type some text");
  if (static_cast<int64_t>(tokens.size()) > request.limits.maxTokens) {
    throw Error(ErrorKind::ResourceLimit, what + " has " + std::to_string(tokens.size()) +
                                              " tokens, more than the limit of " +
                                              std::to_string(request.limits.maxTokens) +
                                              " (raise --max-tokens)");
  }
  if (maxPositions > 0 && static_cast<int>(tokens.size()) > maxPositions) {
    const std::size_t drop = tokens.size() - static_cast<std::size_t>(maxPositions);
    notices.push_back(
        what + " has " + std::to_string(tokens.size()) + " tokens but the model sees at most " +
        std::to_string(maxPositions) + ": showing tokens " + std::to_string(drop + 1) + "-" +
        std::to_string(tokens.size()) + " (the last " + std::to_string(maxPositions) + ")");
    tokens.erase(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(drop));
  }
  std::size_t unknown = 0;
  for (const Token& t : tokens) unknown += t.unknown ? 1 : 0;
  if (unknown > 0) {
    notices.push_back(what + ": " + std::to_string(unknown) +
                      " character(s) are not in the model's vocabulary and are shown as unknown");
  }
  return tokens;
}

}  // namespace

BatchInput tokenizeBatch(const RunRequest& request, const TokenizeFn& tokenize, int maxPositions) {
  if (request.texts.empty())
    throw Error(ErrorKind::InvalidArgument, "no text given: type some text");
  BatchInput in;
  const bool several = request.texts.size() > 1;
  for (std::size_t i = 0; i < request.texts.size(); ++i) {
    const std::string what = several ? "text " + std::to_string(i + 1) : "the text";
    in.tokens.push_back(
        tokenizeOne(request.texts[i], what, request, tokenize, maxPositions, in.notices));
    in.queryLengths.push_back(static_cast<int>(in.tokens.back().size()));
    in.maxQuery = std::max<int64_t>(in.maxQuery, in.queryLengths.back());
  }
  if (request.context) {
    const std::vector<Token> ctx =
        tokenizeOne(*request.context, "the context", request, tokenize, maxPositions, in.notices);
    in.contextTokens.assign(in.tokens.size(), ctx);
    in.keyLengths.assign(in.tokens.size(), static_cast<int>(ctx.size()));
    in.maxKey = static_cast<int64_t>(ctx.size());
  } else {
    in.keyLengths = in.queryLengths;
    in.maxKey = in.maxQuery;
  }
  return in;
}

void addDecoderInputs(BatchInput& batch, const RunRequest& request, const Token& start,
                      const TokenizeFn& tokenizeTarget) {
  std::vector<Token> input = {start};
  input.front().special = true;
  if (request.target) {
    const std::vector<Token> target =
        tokenizeOne(*request.target, "the target", request, tokenizeTarget, 0, batch.notices);
    input.insert(input.end(), target.begin(), target.end());
  }
  batch.decoderTokens.assign(batch.tokens.size(), input);
  batch.decoderLengths.assign(batch.tokens.size(), static_cast<int>(input.size()));
  batch.maxDecoder = static_cast<int64_t>(input.size());
}

void appendDecoderToken(BatchInput& batch, std::size_t b, Token token) {
  batch.decoderTokens[b].push_back(std::move(token));
  batch.decoderLengths[b] = static_cast<int>(batch.decoderTokens[b].size());
  batch.maxDecoder = std::max<int64_t>(batch.maxDecoder, batch.decoderLengths[b]);
}

torch::Tensor paddedIds(const std::vector<std::vector<Token>>& tokens, int64_t T) {
  const int64_t B = static_cast<int64_t>(tokens.size());
  torch::Tensor ids = torch::zeros({B, T}, torch::kLong);
  auto idAt = ids.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<Token>& item = tokens[static_cast<std::size_t>(b)];
    for (std::size_t t = 0; t < item.size(); ++t) idAt[b][static_cast<int64_t>(t)] = item[t].id;
  }
  return ids;
}

void moveTokensInto(BatchInput&& batch, AttentionResult& r) {
  if (!batch.decoderTokens.empty()) {
    for (AttentionGroup& d : r.groups) {
      if (d.name != "decoder_self" && d.name != "cross") continue;
      d.tokens = batch.decoderTokens;
      d.queryLengths = batch.decoderLengths;
      if (d.name == "cross") {
        d.contextTokens = batch.tokens;
        d.keyLengths = batch.keyLengths;
      } else {
        d.keyLengths = batch.decoderLengths;
      }
    }
  }
  AttentionGroup& g = r.group();
  g.tokens = std::move(batch.tokens);
  g.contextTokens = std::move(batch.contextTokens);
  g.queryLengths = std::move(batch.queryLengths);
  g.keyLengths = std::move(batch.keyLengths);
  for (std::string& n : batch.notices) r.notices.push_back(std::move(n));
}

BatchInput randomBatch(const RandomInput& random, const RunLimits& limits) {
  if (random.batch <= 0 || random.seqLen <= 0) {
    throw Error(ErrorKind::InvalidArgument, "batch and seq_len must be positive (got " +
                                                std::to_string(random.batch) + " and " +
                                                std::to_string(random.seqLen) + ")");
  }
  if (random.seqLen > limits.maxTokens) {
    throw Error(ErrorKind::ResourceLimit,
                "seq_len " + std::to_string(random.seqLen) + " is more than the limit of " +
                    std::to_string(limits.maxTokens) + " tokens (raise --max-tokens)");
  }
  BatchInput b;
  std::vector<Token> positions;
  for (int t = 0; t < random.seqLen; ++t) {
    Token tok;
    tok.id = t;
    tok.text = tok.label = "x" + std::to_string(t);
    positions.push_back(tok);
  }
  b.tokens.assign(static_cast<std::size_t>(random.batch), positions);
  b.queryLengths.assign(static_cast<std::size_t>(random.batch), random.seqLen);
  b.keyLengths = b.queryLengths;
  b.maxQuery = b.maxKey = random.seqLen;
  return b;
}

void zeroPaddedQueries(torch::Tensor& t, const std::vector<int>& queryLengths, int batchAxis,
                       int queryAxis) {
  const int64_t Tq = t.size(queryAxis);
  for (std::size_t b = 0; b < queryLengths.size(); ++b) {
    if (queryLengths[b] < Tq) {
      t.select(batchAxis, static_cast<int64_t>(b))
          .narrow(queryAxis - 1, queryLengths[b], Tq - queryLengths[b])
          .zero_();
    }
  }
}

std::string formatBytes(uint64_t bytes) {
  char buf[64];
  const double gib = static_cast<double>(bytes) / (1024.0 * 1024 * 1024);
  if (gib >= 1.0) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", gib);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024));
  }
  return buf;
}

void checkMemory(uint64_t estimateBytes, uint64_t limitBytes, const std::string& what) {
  if (estimateBytes > limitBytes) {
    throw Error(ErrorKind::ResourceLimit,
                what + " needs about " + formatBytes(estimateBytes) +
                    ", more than the memory limit of " + formatBytes(limitBytes) +
                    " (use fewer tokens, heads or batch items, or raise --memory-limit)");
  }
}

void throwIfCancelled(const RunRequest& request) {
  if (request.cancel && request.cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
}

}  // namespace attnscope
