// SPDX-License-Identifier: GPL-3.0-or-later
// Issue 14's aggregation: subword tokens merged into words (HeadMatrix::of with mergeWords)
// against plain loops over the attention, the selection of several queries (ViewState::clickQuery,
// Ctrl/Shift clicks and drags in the heatmap and text views), and their combined rows (sum and
// mean) against plain loops, on screen and in an SVG export.
#include <QImage>
#include <QPainter>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <random>

#include "exporter.h"
#include "fake_result.h"
#include "head_matrix.h"
#include "heatmap_view.h"
#include "qtest_main.h"
#include "text_view.h"
#include "view_state_metatype.h"

using namespace attnscope;
using namespace attnscope::render;

namespace {

// "<s> Tokenization isn't fun!" as a byte-level BPE splits it: words [0] [1-3] [4-6] [7] [8].
const std::vector<std::string> kTexts = {"<s>", " Token", "iz",   "ation", " isn",
                                         "'",   "t",      " fun", "!"};
const std::vector<std::vector<int>> kWords = {{0}, {1, 2, 3}, {4, 5, 6}, {7}, {8}};

/// Random row-stochastic causal attention over kTexts, with offsets and <s> marked special.
std::shared_ptr<AttentionResult> wordResult(unsigned seed = 3) {
  const int T = static_cast<int>(kTexts.size());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.05f, 1.0f);
  std::vector<float> a(static_cast<std::size_t>(T) * T, 0.0f);
  for (int q = 0; q < T; ++q) {
    double sum = 0;
    for (int k = 0; k <= q; ++k) sum += a[q * T + k] = u(rng);
    for (int k = 0; k <= q; ++k) a[q * T + k] = static_cast<float>(a[q * T + k] / sum);
  }
  auto r = test::makeResult(1, 1, T, 1, [&](int, int, int, int q, int k) { return a[q * T + k]; });
  std::size_t offset = 0;
  for (int i = 0; i < T; ++i) {
    Token& t = r->group().tokens[0][static_cast<std::size_t>(i)];
    t.text = t.label = kTexts[static_cast<std::size_t>(i)];
    t.special = i == 0;
    t.byteBegin = i == 0 ? 0 : offset;
    t.byteEnd = i == 0 ? 0 : offset + t.text.size();
    if (i > 0) offset += t.text.size();
  }
  // Scores: log of the weights, −∞ where masked (what a causal model keeps).
  r->group().scores = FloatTensor({1, 1, 1, T, T});
  for (int i = 0; i < T * T; ++i)
    r->group().scores.data[static_cast<std::size_t>(i)] =
        a[static_cast<std::size_t>(i)] > 0 ? std::log(a[static_cast<std::size_t>(i)])
                                           : -std::numeric_limits<float>::infinity();
  return r;
}

double weight(const AttentionGroup& g, int q, int k) {
  return g.headMatrix(0, 0, 0)[q * g.keys() + k];
}

}  // namespace

class AggregationTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { qRegisterMetaType<ViewState>(); }

  // Columns summed, rows averaged, as plain loops over the token matrix; rows still sum to 1.
  void mergedWordsEqualPlainLoops() {
    const auto r = wordResult();
    const AttentionGroup& g = r->group();
    const HeadMatrix m = HeadMatrix::of(g, 0, 0, 0, false, false, true);
    QVERIFY(m.mergedWords);
    QCOMPARE(m.rows, static_cast<int>(kWords.size()));
    QCOMPARE(m.cols, m.rows);
    QCOMPARE(m.rowTexts.value(1), QStringLiteral("␣Tokenization"));
    QCOMPARE(m.rowTexts.value(2), QStringLiteral("␣isn't"));
    QCOMPARE(m.rowPositions(1), QStringLiteral("#1–3"));
    QCOMPARE(m.colPositions(3), QStringLiteral("#7"));
    QCOMPARE(m.rowOfToken(5), 2);  // the apostrophe is inside "isn't"
    double worst = 0;
    for (std::size_t R = 0; R < kWords.size(); ++R) {
      double rowSum = 0;
      for (std::size_t C = 0; C < kWords.size(); ++C) {
        double want = 0;
        for (int q : kWords[R])
          for (int k : kWords[C]) want += weight(g, q, k);
        want /= static_cast<double>(kWords[R].size());
        worst = std::max(worst, std::abs(want - m.at(static_cast<int>(R), static_cast<int>(C))));
        rowSum += m.at(static_cast<int>(R), static_cast<int>(C));
      }
      QVERIFY2(std::abs(rowSum - 1) < 1e-5, qPrintable(QStringLiteral("word row %1").arg(R)));
    }
    QVERIFY2(worst < 1e-6, qPrintable(QString::number(worst)));
    // Without merging nothing changes: one row per token, the weights as they are.
    const HeadMatrix plain = HeadMatrix::of(g, 0, 0, 0, false, false, false);
    QVERIFY(!plain.mergedWords);
    QCOMPARE(plain.rows, static_cast<int>(kTexts.size()));
    QCOMPARE(plain.at(6, 2), static_cast<float>(weight(g, 6, 2)));
  }

  // Hidden specials first (rows renormalised over the keys shown), then the words merged.
  void hiddenSpecialsThenMergedWords() {
    const auto r = wordResult(5);
    const AttentionGroup& g = r->group();
    const HeadMatrix m = HeadMatrix::of(g, 0, 0, 0, false, true, true);
    QCOMPARE(m.rows, 4);
    QCOMPARE(m.hiddenSpecial, 1);
    for (std::size_t R = 1; R < kWords.size(); ++R) {
      for (std::size_t C = 1; C < kWords.size(); ++C) {
        double want = 0;
        for (int q : kWords[R]) {
          double shown = 0;
          for (int k = 1; k < g.keys(); ++k) shown += weight(g, q, k);
          for (int k : kWords[C]) want += weight(g, q, k) / shown;
        }
        want /= static_cast<double>(kWords[R].size());
        QVERIFY(std::abs(want - m.at(static_cast<int>(R) - 1, static_cast<int>(C) - 1)) < 1e-6);
      }
    }
  }

  // One token a row and column (the path of long inputs, gathered four cells at a time): every
  // cell, the range and the masked flag against a plain loop, at a width with a leftover tail,
  // the extremes and the non-finite cells both in whole lanes and in the tail, and a reused
  // buffer of the same size whose stale cells must not show through.
  void gatheredCellsEqualAPlainLoop() {
    const int T = 39;  // 9 whole lanes of 4, a tail of 3
    const float inf = std::numeric_limits<float>::infinity();
    const auto value = [&](int q, int k) -> float {
      if (q == 5 && k == 2) return -inf;  // masked, in a whole lane
      if (q == 7 && k == 37) return std::numeric_limits<float>::quiet_NaN();  // in the tail
      if (q == 11 && k == 38) return inf;                                     // in the tail
      if (q == 20 && k == 36) return -7.5f;  // the smallest, in the tail
      if (q == 30 && k == 9) return 9.25f;   // the largest, in a whole lane
      return std::sin(0.37f * static_cast<float>(q * T + k));
    };
    // Every non-finite cell; none; only the one in a whole lane.
    for (const int variant : {0, 1, 2}) {
      const bool withMasked = variant != 1;
      const auto r = test::makeResult(1, 1, T, 1, [&](int, int, int, int q, int k) {
        const float v = value(q, k);
        const bool keep = variant == 0 || (variant == 2 && q == 5 && k == 2);
        return keep || std::isfinite(v) ? v : 0.5f;
      });
      HeadMatrix m;
      m.values.assign(static_cast<std::size_t>(T) * T, 123.0f);  // stale, same size
      HeadMatrix::fill(m, r->group(), 0, 0, 0, false, false, false);
      QCOMPARE(m.rows, T);
      QCOMPARE(m.cols, T);
      float lo = inf, hi = -inf;
      bool masked = false;
      for (int q = 0; q < T; ++q) {
        for (int k = 0; k < T; ++k) {
          const float v = r->group().headMatrix(0, 0, 0)[q * T + k];
          if (std::isfinite(v)) {
            QCOMPARE(m.at(q, k), v);
            lo = std::min(lo, v);
            hi = std::max(hi, v);
          } else {
            QVERIFY2(std::isnan(m.at(q, k)), qPrintable(QString("cell %1, %2").arg(q).arg(k)));
            masked = true;
          }
        }
      }
      QCOMPARE(m.minValue, -7.5f);
      QCOMPARE(m.maxValue, 9.25f);
      QCOMPARE(m.minValue, lo);
      QCOMPARE(m.maxValue, hi);
      QCOMPARE(m.hasMasked, masked);
      QCOMPARE(m.hasMasked, withMasked);
    }
  }

  // Scores are averaged over the block, masked (−∞) ones left out; all masked stays masked.
  void mergedScoresAreAveraged() {
    const auto r = wordResult();
    const AttentionGroup& g = r->group();
    const HeadMatrix m = HeadMatrix::of(g, 0, 0, 0, true, false, true);
    QVERIFY(m.scores);
    const float* s = g.scoreMatrix(0, 0, 0);
    // Word 1 (tokens 1–3) to itself: the lower triangle only.
    double sum = 0;
    int n = 0;
    for (int q : kWords[1])
      for (int k : kWords[1])
        if (k <= q) sum += s[q * g.keys() + k], ++n;
    QCOMPARE(n, 6);
    QVERIFY(std::abs(m.at(1, 1) - sum / n) < 1e-5);
    QVERIFY(std::isnan(m.at(1, 2)));  // "Tokenization" cannot see "isn't"
    QVERIFY(m.hasMasked);
  }

  void clicksSelectQueries() {
    ViewState s;
    s.clickQuery(4, false, false);
    QCOMPARE(s.pinnedQuery, 4);
    QVERIFY(s.queryGroup.empty());
    s.clickQuery(7, true, false);  // Ctrl: add
    QCOMPARE(s.queryGroup, (std::vector<int>{4, 7}));
    QCOMPARE(s.pinnedQuery, 7);
    s.clickQuery(2, true, false);
    QCOMPARE(s.selectedQueries(), (std::vector<int>{2, 4, 7}));
    s.clickQuery(4, true, false);  // Ctrl again: take out
    QCOMPARE(s.selectedQueries(), (std::vector<int>{2, 7}));
    s.clickQuery(7, true, false);
    QVERIFY(s.queryGroup.empty());  // one left: just pinned
    QCOMPARE(s.pinnedQuery, 2);
    s.clickQuery(5, false, true);  // Shift: the range from the pinned token
    QCOMPARE(s.queryGroup, (std::vector<int>{2, 3, 4, 5}));
    QCOMPARE(s.pinnedQuery, 2);
    s.clickQuery(0, false, true);  // moves the range's other end
    QCOMPARE(s.queryGroup, (std::vector<int>{0, 1, 2}));
    s.clickQuery(6, false, false);  // a plain click: one query again
    QCOMPARE(s.selectedQueries(), (std::vector<int>{6}));
    s.clickQuery(6, false, false);  // and again: none
    QVERIFY(s.selectedQueries().empty());
  }

  // Ctrl and Shift clicks in the heatmap edit the selection; its rows are combined by loops.
  void heatmapSelectionAndCombinedRow() {
    const auto r = test::gpt2Like(1, 1, 12);
    HeatmapView view;
    view.resize(800, 700);
    view.setResult(r);
    ViewState s;
    s.pinnedQuery = 3;
    view.setViewState(s);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QImage image(800, 700, QImage::Format_RGB32);
    {
      QPainter p(&image);
      view.renderTo(p, image.rect(), QString());
    }
    // renderTo's cell centres are in the image's coordinates, as the plot on screen is laid out.
    QSignalSpy edited(&view, &AttentionView::viewStateEdited);
    auto* plot = view.findChild<QWidget*>();
    QVERIFY(plot);
    const QPointF cell = view.lastCellCenter(8, 2);
    QTest::mouseClick(plot, Qt::LeftButton, Qt::ControlModifier, cell.toPoint());
    QCOMPARE(edited.size(), 1);
    ViewState got = edited.last().at(0).value<ViewState>();
    QCOMPARE(got.queryGroup, (std::vector<int>{3, 8}));
    QTest::mouseClick(plot, Qt::LeftButton, Qt::ShiftModifier, view.lastCellCenter(5, 2).toPoint());
    got = edited.last().at(0).value<ViewState>();
    QCOMPARE(got.queryGroup, (std::vector<int>{3, 4, 5}));

    const HeadMatrix& m = view.matrix();
    for (bool sum : {false, true}) {
      const std::vector<double> row = m.combineRows({3, 8, 10}, sum);
      for (int k = 0; k < m.cols; ++k) {
        const double want =
            (double{m.at(3, k)} + double{m.at(8, k)} + double{m.at(10, k)}) / (sum ? 1.0 : 3.0);
        QVERIFY(std::abs(row[static_cast<std::size_t>(k)] - want) < 1e-12);
      }
    }
    // The strip under the matrix says how it combines them, on screen and in an export.
    s.queryGroup = {3, 8, 10};
    s.aggregate = QueryAggregate::Sum;
    view.setViewState(s);
    QTemporaryDir dir;
    const QString svg = dir.filePath(QStringLiteral("heatmap.svg"));
    ExportOptions options;
    options.format = ImageFormat::Svg;
    QCOMPARE(Exporter::exportView(view, svg, options), QString());
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll().contains("sum of 3 queries"));
  }

  // The text view colours by the selection's combined row; a drag selects a range; merged words
  // are one box each.
  void textViewCombinesTheSelection() {
    const auto r = test::gpt2Like(1, 2, 14);
    TextView view;
    view.resize(900, 500);
    view.setResult(r);
    ViewState s;
    s.queryGroup = {4, 9};
    s.pinnedQuery = 9;
    view.setViewState(s);
    for (QueryAggregate a : {QueryAggregate::Mean, QueryAggregate::Sum}) {
      s.aggregate = a;
      view.setViewState(s);
      const std::vector<double> row = view.shownRow();
      QCOMPARE(static_cast<int>(row.size()), 14);
      for (int k = 0; k < 14; ++k) {
        const double want = (weight(r->group(), 4, k) + weight(r->group(), 9, k)) /
                            (a == QueryAggregate::Sum ? 1.0 : 2.0);
        QVERIFY(std::abs(row[static_cast<std::size_t>(k)] - want) < 1e-6);
      }
    }
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.grab();
    QSignalSpy edited(&view, &AttentionView::viewStateEdited);
    QTest::mousePress(&view, Qt::LeftButton, {}, view.tokenRect(2).center().toPoint());
    QTest::mouseMove(&view, view.tokenRect(6).center().toPoint());
    QTest::mouseRelease(&view, Qt::LeftButton, {}, view.tokenRect(6).center().toPoint());
    QCOMPARE(edited.size(), 1);
    QCOMPARE(edited.last().at(0).value<ViewState>().queryGroup, (std::vector<int>{2, 3, 4, 5, 6}));

    TextView words;
    words.setResult(wordResult());
    ViewState w;
    w.mergeWords = true;
    w.pinnedQuery = 5;  // inside "isn't": the word is the query
    words.setViewState(w);
    QCOMPARE(words.positions(), (std::vector<int>{0, 1, 4, 7, 8}));
    QCOMPARE(words.tokenText(1), QStringLiteral(" Tokenization"));
    const auto same = wordResult();
    const HeadMatrix m = HeadMatrix::of(same->group(), 0, 0, 0, false, false, true);
    const std::vector<double> row = words.shownRow();
    for (int k = 0; k < m.cols; ++k)
      QVERIFY(std::abs(row[static_cast<std::size_t>(k)] - m.at(2, k)) < 1e-6);
  }
};

ATTNSCOPE_QTEST(AggregationTest)
#include "aggregation_test.moc"
