// SPDX-License-Identifier: GPL-3.0-or-later
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "attnscope/error.h"
#include "attnscope/sampling.h"

namespace attnscope {

void SamplingOptions::validate() const {
  const auto bad = [](const std::string& what) { throw Error(ErrorKind::InvalidArgument, what); };
  if (!std::isfinite(temperature) || temperature < 0)
    bad("the temperature must be 0 (greedy) or positive");
  if (topK < 0) bad("top-k must be 0 (all tokens) or positive");
  if (!(topP > 0 && topP <= 1)) bad("top-p must be in (0, 1]");
  if (!(repetitionPenalty > 0) || !std::isfinite(repetitionPenalty))
    bad("the repetition penalty must be positive (1: none)");
}

namespace {

/// softmax over the finite entries of z (-inf entries get 0), in double.
std::vector<double> softmax(const std::vector<double>& z) {
  double top = -std::numeric_limits<double>::infinity();
  for (double v : z) top = std::max(top, v);
  std::vector<double> p(z.size(), 0.0);
  if (!std::isfinite(top)) {
    // Every logit -inf or NaN: nothing to prefer, so nothing is invented; token 0 keeps it all.
    if (!p.empty()) p[0] = 1;
    return p;
  }
  double sum = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    p[i] = std::isnan(z[i]) ? 0.0 : std::exp(z[i] - top);
    sum += p[i];
  }
  for (double& v : p) v /= sum;
  return p;
}

}  // namespace

std::vector<double> softmaxDistribution(const std::vector<float>& logits) {
  return softmax(std::vector<double>(logits.begin(), logits.end()));
}

std::vector<double> samplingDistribution(const std::vector<float>& logits,
                                         const std::vector<int64_t>& previous,
                                         const SamplingOptions& o) {
  o.validate();
  if (logits.empty()) throw Error(ErrorKind::InvalidArgument, "no logits to sample from");
  const auto V = static_cast<int64_t>(logits.size());
  std::vector<double> z(logits.begin(), logits.end());
  if (o.repetitionPenalty != 1.0) {
    std::vector<bool> seen(z.size(), false);
    for (int64_t id : previous) {
      if (id < 0 || id >= V || seen[static_cast<std::size_t>(id)]) continue;
      seen[static_cast<std::size_t>(id)] = true;
      double& v = z[static_cast<std::size_t>(id)];
      // HF computes this in the logits' dtype (float32): so do we, then widen.
      const auto f = static_cast<float>(v);
      const auto penalty = static_cast<float>(o.repetitionPenalty);
      v = f < 0 ? f * penalty : f / penalty;
    }
  }
  if (o.greedy()) return softmax(z);
  for (double& v : z) v /= o.temperature;
  const double minusInf = -std::numeric_limits<double>::infinity();
  if (o.topK > 0 && o.topK < V) {
    std::vector<double> sorted = z;
    std::nth_element(sorted.begin(), sorted.begin() + (o.topK - 1), sorted.end(),
                     std::greater<double>());
    const double kth = sorted[static_cast<std::size_t>(o.topK - 1)];
    for (double& v : z)
      if (v < kth) v = minusInf;
  }
  std::vector<double> p = softmax(z);
  if (o.topP < 1.0) {
    // Most likely first (the lower id first on a tie); a token stays while the probability of
    // those before it is below topP, so the one that crosses topP stays, and so does the first.
    std::vector<int64_t> order(z.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return p[static_cast<std::size_t>(a)] > p[static_cast<std::size_t>(b)];
    });
    double before = 0;
    for (int64_t id : order) {
      const double pi = p[static_cast<std::size_t>(id)];
      if (before >= o.topP) z[static_cast<std::size_t>(id)] = minusInf;
      before += pi;
    }
    p = softmax(z);
  }
  return p;
}

double entropyNats(const std::vector<double>& distribution) {
  double h = 0;
  for (double p : distribution)
    if (p > 0) h -= p * std::log(p);
  return h;
}

int64_t drawToken(const std::vector<double>& distribution, const SamplingOptions& options,
                  std::mt19937_64& rng) {
  if (distribution.empty()) throw Error(ErrorKind::InvalidArgument, "no tokens to choose from");
  if (options.greedy())
    return std::max_element(distribution.begin(), distribution.end()) - distribution.begin();
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  const double total = std::accumulate(distribution.begin(), distribution.end(), 0.0);
  const double target = u * total;
  double cumulative = 0;
  int64_t last = 0;
  for (std::size_t i = 0; i < distribution.size(); ++i) {
    if (distribution[i] <= 0) continue;
    cumulative += distribution[i];
    last = static_cast<int64_t>(i);
    if (cumulative > target) return last;
  }
  return last;  // rounding left u · total at the very end
}

}  // namespace attnscope
