// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/result_json.h"

#include <nlohmann/json.hpp>

#include "io/file_io.h"

namespace attnscope {
namespace {

using nlohmann::json;

json traceToJson(const AttentionResult& r) {
  json layers = json::array();
  for (const LayerTrace& lt : r.traces) {
    json steps = json::array();
    for (const TraceStep& s : lt.steps) {
      steps.push_back({{"name", s.name},
                       {"op", s.op},
                       {"kind", s.kind},
                       {"shape", s.shape},
                       {"head", s.head},
                       {"inputs", s.inputs}});
    }
    json layer = {{"variant", lt.variant}, {"steps", steps}};
    if (!lt.stack.empty()) layer["stack"] = lt.stack;
    layers.push_back(std::move(layer));
  }
  return {{"layers", layers}};
}

json tokenList(const std::vector<Token>& tokens) {
  json items = json::array();
  for (const Token& t : tokens) {
    // Raw BPE bytes may be a partial character; the label is always valid UTF-8.
    json j = {{"id", t.id}, {"label", t.label}, {"begin", t.byteBegin}, {"end", t.byteEnd}};
    j["text"] = t.text;  // raw bytes; dumped with invalid UTF-8 replaced
    if (t.unknown) j["unknown"] = true;
    if (t.special) j["special"] = true;
    j["segment"] = t.segment;
    items.push_back(std::move(j));
  }
  return items;
}

json tokensToJson(const std::vector<std::vector<Token>>& batch) {
  json out = json::array();
  for (const auto& item : batch) out.push_back(tokenList(item));
  return out;
}

// Nested arrays [layer][item][head][query][key] from the flat tensor.
json nested(const FloatTensor& t, std::size_t axis, std::size_t offset) {
  json arr = json::array();
  if (axis + 1 == t.shape.size()) {
    for (int64_t i = 0; i < t.shape[axis]; ++i) arr.push_back(t.data[offset + i]);
    return arr;
  }
  std::size_t stride = 1;
  for (std::size_t a = axis + 1; a < t.shape.size(); ++a) stride *= t.shape[a];
  for (int64_t i = 0; i < t.shape[axis]; ++i)
    arr.push_back(nested(t, axis + 1, offset + i * stride));
  return arr;
}

}  // namespace

std::string traceJson(const AttentionResult& result) {
  return traceToJson(result).dump(2, ' ', false, json::error_handler_t::replace);
}

std::string tokensJson(const AttentionResult& result, const std::string& group) {
  return tokensToJson(result.group(group).tokens)
      .dump(2, ' ', false, json::error_handler_t::replace);
}

std::vector<int64_t> attentionShape(const AttentionGroup& g) {
  if (!g.onDemand()) return g.attention.shape;
  const std::array<int64_t, 5> s = g.source->shape();
  return {s.begin(), s.end()};
}

std::string resultJson(const AttentionResult& r, bool includeAttention) {
  json j;
  j["model"] = r.modelName;
  j["device"] = r.device;
  j["tokens"] = tokensToJson(r.group().tokens);
  if (!r.group().contextTokens.empty()) j["context_tokens"] = tokensToJson(r.group().contextTokens);
  j["query_lengths"] = r.group().queryLengths;
  j["key_lengths"] = r.group().keyLengths;
  j["shapes"] = {{"attention", attentionShape(r.group())},
                 {"output", r.output.shape},
                 {"input", r.input.shape}};
  // The attention's first axis holds these model layers when the run kept only some.
  if (!r.group().keptLayers.empty()) j["kept_layers"] = r.group().keptLayers;
  if (const AttentionGroup* decoder = r.findGroup("decoder_self")) {
    // Encoder-decoders: the decoder's inputs (start token first) and the two decoder groups.
    j["decoder_tokens"] = tokensToJson(decoder->tokens);
    j["decoder_lengths"] = decoder->queryLengths;
    j["shapes"]["decoder_attention"] = attentionShape(*decoder);
    if (const AttentionGroup* cross = r.findGroup("cross"))
      j["shapes"]["cross_attention"] = attentionShape(*cross);
    j["shapes"]["decoder_output"] = r.decoderOutput.shape;
    if (!r.generated.empty()) j["generated"] = tokensToJson(r.generated);
  }
  j["trace"] = traceToJson(r)["layers"];
  j["timings_ms"] = {{"tokenize", r.timings.tokenizeMs},
                     {"forward", r.timings.forwardMs},
                     {"total", r.timings.totalMs}};
  j["notices"] = r.notices;
  if (!r.nextToken.empty()) {
    json next = json::array();
    for (const Prediction& p : r.nextToken)
      next.push_back({{"token", p.token.label}, {"id", p.token.id}, {"p", p.probability}});
    j["next_token"] = next;
  }
  if (!r.nextTokens.empty()) {
    json all = json::array();
    for (const std::vector<Prediction>& item : r.nextTokens) {
      json next = json::array();
      for (const Prediction& p : item)
        next.push_back({{"token", p.token.label}, {"id", p.token.id}, {"p", p.probability}});
      all.push_back(std::move(next));
    }
    j["next_tokens"] = all;
  }
  if (!r.maskFills.empty()) {
    json fills = json::array();
    for (const MaskFill& f : r.maskFills) {
      json predictions = json::array();
      for (const Prediction& p : f.predictions)
        predictions.push_back({{"token", p.token.label}, {"id", p.token.id}, {"p", p.probability}});
      fills.push_back({{"position", f.position}, {"predictions", predictions}});
    }
    j["mask_fills"] = fills;
  }
  if (includeAttention && !r.group().attention.empty())
    j["attention"] = nested(r.group().attention, 0, 0);
  // Not stored: read with export (heatmap, grid, stats) or analyze (long-range, retrieval).
  if (r.group().onDemand()) j["attention_on_demand"] = true;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void writeTextFile(const std::string& path, const std::string& text) {
  writeOutputFile(path, text);
}

}  // namespace attnscope
