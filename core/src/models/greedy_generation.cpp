// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/greedy_generation.h"

#include <utility>

#include "attnscope/error.h"

namespace attnscope {

std::vector<std::vector<Token>> generateGreedily(BatchInput& batch, int steps,
                                                 TransformerFamily& family,
                                                 const std::function<torch::Tensor()>& decode,
                                                 const std::string& modelName) {
  const std::size_t B = batch.decoderTokens.size();
  std::vector<std::vector<Token>> generated(B);
  std::vector<bool> finished(B, false);
  const std::optional<int64_t> end = family.endTokenId();
  for (int step = 0; step < steps; ++step) {
    const torch::Tensor h = decode();
    bool any = false;
    for (std::size_t i = 0; i < B; ++i) {
      if (finished[i]) continue;
      const torch::Tensor logits =
          family.logits(h[static_cast<int64_t>(i)][batch.decoderLengths[i] - 1]);
      if (!logits.defined())
        throw Error(ErrorKind::InvalidArgument,
                    modelName + " has no language-model head: it cannot generate");
      Token next = family.vocabularyToken(logits.argmax().item<int64_t>());
      finished[i] = end && next.id == *end;
      generated[i].push_back(next);
      appendDecoderToken(batch, i, std::move(next));
      any = any || !finished[i];
    }
    if (!any) break;
  }
  return generated;
}

}  // namespace attnscope
