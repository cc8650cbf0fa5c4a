// SPDX-License-Identifier: GPL-3.0-or-later
#include "dump_writer.h"

#include <algorithm>
#include <filesystem>

#include "attnscope/file_io.h"
#include "attnscope/npy.h"
#include "attnscope/result_json.h"
#include "attnscope/safetensors.h"

namespace attnscope::cli {

void writeDump(const std::string& dir, const AttentionResult& result, const Model& model) {
  // Every name a dump writes: an existing folder holding only these is an earlier dump and may be
  // replaced; anything else in it means it is not ours to delete.
  static const std::vector<std::string> kNames = {
      "input.npy", "context.npy", "weights.safetensors", "attention.npy", "output.npy",
      "trace.json", "tokens.json", "router_experts.npy", "router_weights.npy", "logit_lens_ids.npy",
      "logit_lens_probs.npy", "logit_lens_next.npy", "logits.npy",
      // the terms of the scores (DeBERTa: RunRequest::keepScoreTerms)
      "scores_c2c.npy", "scores_c2p.npy", "scores_p2c.npy",
      // encoder-decoders
      "decoder_tokens.json", "decoder_attention.npy", "cross_attention.npy", "decoder_output.npy"};
  // Written into a sibling folder that replaces `dir` in one rename, so a reader (or a full disk)
  // sees the old dump or the new one, never a mix of both.
  replaceFolderAtomically(
      dir, kNames,
      [&](const std::string& temp) {
        const auto at = [&](const char* name) {
          return (std::filesystem::path(temp) / name).string();
        };
        writeNpy(at("input.npy"), result.input);
        if (!result.contextInput.empty()) writeNpy(at("context.npy"), result.contextInput);
        writeSafetensors(at("weights.safetensors"), model.parameters());
        writeNpy(at("attention.npy"), result.group().attention);
        writeNpy(at("output.npy"), result.output);
        writeTextFile(at("trace.json"), traceJson(result));
        writeTextFile(at("tokens.json"), tokensJson(result));
        if (!result.logits.empty()) writeNpy(at("logits.npy"), result.logits);
        for (const ScoreTerm& term : result.group().scoreTerms) {
          const std::string name = "scores_" + term.name + ".npy";
          if (std::find(kNames.begin(), kNames.end(), name) != kNames.end())
            writeNpy(at(name.c_str()), term.values);
        }
        if (!result.routerExperts.empty()) {  // mixture-of-experts models
          writeNpy(at("router_experts.npy"), result.routerExperts);
          writeNpy(at("router_weights.npy"), result.routerWeights);
        }
        if (!result.logitLensIds.empty()) {  // run --logit-lens
          writeNpy(at("logit_lens_ids.npy"), result.logitLensIds);
          writeNpy(at("logit_lens_probs.npy"), result.logitLensProbs);
          writeNpy(at("logit_lens_next.npy"), result.logitLensNext);
        }
        if (const AttentionGroup* decoder = result.findGroup("decoder_self")) {
          // attention.npy is then the encoder's self-attention, tokens.json the source.
          writeTextFile(at("decoder_tokens.json"), tokensJson(result, "decoder_self"));
          writeNpy(at("decoder_attention.npy"), decoder->attention);
          if (const AttentionGroup* cross = result.findGroup("cross"))
            writeNpy(at("cross_attention.npy"), cross->attention);
          writeNpy(at("decoder_output.npy"), result.decoderOutput);
        }
      },
      "--dump folder");
}

}  // namespace attnscope::cli
