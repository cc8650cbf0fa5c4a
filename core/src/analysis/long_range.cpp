// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/long_range.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/head_rows.h"
#include "analysis/head_statistics_accumulator.h"

namespace attnscope {
namespace {

/// The bucket of a distance d ≥ 0: floor(log2(d + 1)).
int bucketOf(int d) {
  int b = 0;
  while ((d + 1) >> (b + 1)) ++b;
  return b;
}

}  // namespace

bool attentionRows(const AttentionGroup& g, int layer, int item, int head, int q0, int q1,
                   float* out) {
  const int slot = g.slotOf(layer);
  if (slot < 0) return false;
  const int Tk = g.keys();
  if (g.onDemand()) {
    g.source->tile(slot, item, head, q0, q1, 0, Tk, out);
    return true;
  }
  const float* m = g.headMatrix(layer, item, head);
  std::copy(m + static_cast<std::size_t>(q0) * Tk, m + static_cast<std::size_t>(q1) * Tk, out);
  return true;
}

LongRangeProfile longRangeProfile(const AttentionGroup& g, int layer, int item, int head,
                                  int sinkTokens) {
  LongRangeProfile p;
  const int nk = g.keyLengths.empty() ? g.keys() : g.keyLengths[static_cast<std::size_t>(item)];
  HeadStatisticsAccumulator stats(nk);
  p.distanceMass.assign(static_cast<std::size_t>(bucketOf(std::max(0, nk - 1)) + 1), 0.0);
  int rows = 0;
  const bool kept = forEachRow(g, layer, item, head, [&](int q, const float* row) {
    stats.add(q, row);
    double sink = 0;
    for (int k = 0; k < std::min(sinkTokens, nk); ++k) sink += row[k];
    p.sinkShare += sink;
    // Whole buckets at a time: distances [2^b − 1, 2^(b+1) − 1) back from q and the same ahead,
    // no logarithm per key (a 1B model at 8,192 tokens has 3·10^10 weights to bucket).
    for (std::size_t b = 0; b < p.distanceMass.size(); ++b) {
      const int from = (1 << b) - 1, to = (1 << (b + 1)) - 1;  // distances [from, to)
      double sum = 0;
      for (int k = std::max(0, q - to + 1); k <= q - from && k < nk; ++k) sum += row[k];
      for (int k = std::max(q + from, q + 1); k < std::min(nk, q + to); ++k) sum += row[k];
      p.distanceMass[b] += sum;
    }
    ++rows;
  });
  if (!kept) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    p.statistics = {nan, nan, nan, nan, nan, nan};
    p.sinkShare = nan;
    std::fill(p.distanceMass.begin(), p.distanceMass.end(), nan);
    return p;
  }
  p.statistics = stats.result();
  if (rows > 0) {
    p.sinkShare /= rows;
    for (double& m : p.distanceMass) m /= rows;
  }
  return p;
}

std::vector<float> pooledAttention(const AttentionGroup& g, int layer, int item, int head, int rows,
                                   int cols) {
  if (!g.hasLayer(layer) || rows <= 0 || cols <= 0) return {};
  const int nq =
      g.queryLengths.empty() ? g.queries() : g.queryLengths[static_cast<std::size_t>(item)];
  const int nk = g.keyLengths.empty() ? g.keys() : g.keyLengths[static_cast<std::size_t>(item)];
  const int R = std::min(rows, nq), C = std::min(cols, nk);
  if (R == 0 || C == 0) return {};
  std::vector<float> out(static_cast<std::size_t>(R) * C, 0.0f);
  // Cell (r, c) covers rows [⌊r·nq/R⌋, ⌊(r+1)·nq/R⌋) and keys [⌊c·nk/C⌋, ⌊(c+1)·nk/C⌋).
  const auto cellsOf = [](int n, int cells) {
    std::vector<int> of(static_cast<std::size_t>(n));
    for (int c = 0; c < cells; ++c)
      for (int64_t i = int64_t(c) * n / cells; i < int64_t(c + 1) * n / cells; ++i)
        of[static_cast<std::size_t>(i)] = c;
    return of;
  };
  const std::vector<int> rowOf = cellsOf(nq, R), colOf = cellsOf(nk, C);
  forEachRow(g, layer, item, head, [&](int q, const float* row) {
    float* cell = out.data() + static_cast<std::size_t>(rowOf[static_cast<std::size_t>(q)]) * C;
    for (int k = 0; k < nk; ++k) {
      float& v = cell[colOf[static_cast<std::size_t>(k)]];
      v = std::max(v, row[k]);
    }
  });
  return out;
}

}  // namespace attnscope
