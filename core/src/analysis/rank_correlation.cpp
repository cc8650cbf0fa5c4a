// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/rank_correlation.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "attnscope/error.h"

namespace attnscope {

std::vector<double> ranksOf(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return values[x] < values[y]; });
  std::vector<double> ranks(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    const double mean = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (std::size_t k = i; k <= j; ++k) ranks[order[k]] = mean;
    i = j + 1;
  }
  return ranks;
}

double spearmanCorrelation(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    throw Error(ErrorKind::InvalidArgument, "rank correlation of series of different lengths (" +
                                                std::to_string(a.size()) + " and " +
                                                std::to_string(b.size()) + ")");
  if (a.size() < 2) return 0;
  const std::vector<double> ra = ranksOf(a), rb = ranksOf(b);
  const double mean = (static_cast<double>(a.size()) + 1) / 2;  // of 1..n, ties included
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  return saa == 0 || sbb == 0 ? 0 : sab / std::sqrt(saa * sbb);
}

}  // namespace attnscope
