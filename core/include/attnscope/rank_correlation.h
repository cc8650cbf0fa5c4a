// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <vector>

namespace attnscope {

/// Spearman's rank correlation of two equally long series: the Pearson correlation of their
/// ranks, ties sharing their mean rank. 1 when the orders agree, -1 when reversed; 0 when either
/// series is constant or shorter than 2. Throws Error(InvalidArgument) on different lengths.
double spearmanCorrelation(const std::vector<double>& a, const std::vector<double>& b);

/// The ranks (1-based, ties averaged) of a series: rank 1 is the smallest value.
std::vector<double> ranksOf(const std::vector<double>& values);

}  // namespace attnscope
