// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "attnscope/attention_result.h"
#include "attnscope/model.h"

namespace attnscope::cli {

/// Writes a run's tensors for other tools: input.npy, context.npy, weights.safetensors,
/// attention.npy, output.npy, trace.json and tokens.json; for encoder-decoders also
/// decoder_tokens.json (the decoder inputs, start token first), decoder_attention.npy
/// [Ld, B, H, Tt, Tt], cross_attention.npy [Ld, B, H, Tt, Ts] and decoder_output.npy (attention.npy
/// and output.npy are then the encoder's, tokens.json the source); for mixture-of-experts models
/// router_experts.npy and router_weights.npy [L, B, T, k] (AttentionResult::routerExperts,
/// routerWeights); for models whose scores are a sum of terms (DeBERTa, RunRequest::keepScoreTerms)
/// scores_c2c.npy, scores_c2p.npy, scores_p2c.npy [L, B, H, T, T]. Creates the folder; throws
/// attnscope::Error(Io) naming it when it cannot be created or written.
void writeDump(const std::string& dir, const AttentionResult& result, const Model& model);

}  // namespace attnscope::cli
