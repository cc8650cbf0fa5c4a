// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "attnscope/head_statistics.h"

namespace attnscope {

/// HeadStatistics summed one query row at a time, in row order, so that a matrix read in blocks
/// (recomputed on demand, never held whole) gives the same numbers as headStatistics over it:
/// headStatistics itself is this over every row.
class HeadStatisticsAccumulator final {
 public:
  /// keys: the real keys each row holds.
  explicit HeadStatisticsAccumulator(int keys) : m_keys(keys) {}

  /// Row q (its index among the queries: distances and the diagonal are measured from it).
  void add(int q, const float* row) {
    double rowMax = 0;
    for (int k = 0; k < m_keys; ++k) {
      const double a = row[k];
      if (a > 0) m_s.entropy -= a * std::log(a);
      m_s.meanDistance += a * std::abs(q - k);
      rowMax = std::max(rowMax, a);
    }
    m_s.maxWeight += rowMax;
    if (q >= 1 && q - 1 < m_keys) {
      m_previousSum += row[q - 1];
      ++m_previousCount;
    }
    if (q < m_keys) {
      m_diagonalSum += row[q];
      ++m_diagonalCount;
    }
    m_s.firstToken += m_keys > 0 ? row[0] : 0.0;
    ++m_rows;
  }

  /// The averages over the rows added so far (all 0 without rows).
  HeadStatistics result() const {
    HeadStatistics s;
    if (m_rows == 0 || m_keys <= 0) return s;
    s.entropy = m_s.entropy / m_rows;
    s.meanDistance = m_s.meanDistance / m_rows;
    s.maxWeight = m_s.maxWeight / m_rows;
    s.firstToken = m_s.firstToken / m_rows;
    s.previousToken = m_previousCount ? m_previousSum / m_previousCount : 0;
    s.diagonal = m_diagonalCount ? m_diagonalSum / m_diagonalCount : 0;
    return s;
  }

 private:
  int m_keys;
  HeadStatistics m_s;  // sums until result()
  double m_previousSum = 0, m_diagonalSum = 0;
  int m_previousCount = 0, m_diagonalCount = 0, m_rows = 0;
};

}  // namespace attnscope
