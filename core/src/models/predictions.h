// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "attnscope/attention_result.h"
#include "models/transformer_family.h"

namespace attnscope {

/// How many candidates a run reports per prediction.
constexpr int kTopPredictions = 5;

/// Top candidates of a next-token distribution. logits: [V] -> at most k predictions, most likely
/// first.
std::vector<Prediction> topPredictions(const torch::Tensor& logits, int k,
                                       const TransformerFamily& family);

/// Every item's next-token candidates, read from its last real position: hidden [B, T, C] after
/// the final norm, lengths [B]. One [C] row per item, so this costs B small matmuls, not a
/// [B, T, V] tensor. Empty when the family has no language-model head.
std::vector<std::vector<Prediction>> nextTokenPredictions(const torch::Tensor& hidden,
                                                          const std::vector<int>& lengths,
                                                          TransformerFamily& family);

/// The candidates for each mask token of batch item 0 (encoders with a masked-language-model
/// head): tokens are item 0's, hidden [T, C] its final hidden states. Without the head, one
/// notice naming modelName instead. Nothing for a family without a mask token.
void addMaskFills(AttentionResult& r, const std::vector<Token>& tokens, const torch::Tensor& hidden,
                  TransformerFamily& family, const std::string& modelName);

/// RunRequest::keepLogits: r.logits [B, T, V] from hidden [B, T, C] (after the final norm) and
/// the items' lengths, through the language-model head, else the masked-LM head. One item's
/// [T, V] at a time; when [B, T, V] floats would exceed budgetBytes, a notice instead. Nothing
/// for a family without a head.
void addLogits(AttentionResult& r, const torch::Tensor& hidden, const std::vector<int>& lengths,
               TransformerFamily& family, uint64_t budgetBytes, const std::string& modelName);

}  // namespace attnscope
