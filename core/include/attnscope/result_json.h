// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attnscope/attention_result.h"

namespace attnscope {

/// {"layers": [{"variant":..., "steps": [{name, op, kind, shape, head, inputs}]}]}
std::string traceJson(const AttentionResult& result);
/// [[{"id", "text", "begin", "end"}...] per batch item] of the group of that name (see
/// AttentionResult::group: the main one when empty or unknown).
std::string tokensJson(const AttentionResult& result, const std::string& group = {});
/// Tokens, shapes, trace, device, timings, notices and (optionally) the attention weights as
/// nested arrays [layer][item][head][query][key]. A group recomputed on demand has no weights to
/// write: "attention_on_demand": true instead, with the shape the weights would have.
std::string resultJson(const AttentionResult& result, bool includeAttention = true);
/// [kept layers, B, H, Tq, Tk] of a group's attention, stored or recomputed on demand.
std::vector<int64_t> attentionShape(const AttentionGroup& group);
/// Peak bytes resultJson and writing its text take per attention value, beyond the result itself
/// (the JSON document's value, the indented text of ~22 bytes, the string's growth): 52 measured
/// (toy layer, 1500 tokens: peak RSS 206 MiB without --json, 666 MiB with it, 9 M values). For
/// RunLimits::outputBytesPerAttentionValue, so that --json is in the memory estimate.
constexpr uint64_t kResultJsonBytesPerAttentionValue = 56;
/// Writes text through OutputFile (atomic for files, direct for devices). Throws Error(Io).
void writeTextFile(const std::string& path, const std::string& text);

}  // namespace attnscope
