// SPDX-License-Identifier: GPL-3.0-or-later
// Issue 33 in the views: groups whose attention is recomputed on demand (AttentionGroup::source)
// read through HeadMatrix, the grid's pooled tiles and the statistics; past
// HeadMatrix::kMaxOnDemandCells the heatmap draws a lazy matrix; the log colour scale and the
// hidden attention sink. The sources here are plain C++ (no model): one copies a stored result
// (so both forms must agree exactly), one computes a long head from a formula.
#include <QElapsedTimer>
#include <QImage>
#include <QtTest>

#include <atomic>
#include <cmath>
#include <memory>

#include "attnscope/attention_source.h"
#include "attnscope/error.h"
#include "attnscope/head_statistics.h"
#include "exporter.h"
#include "fake_result.h"
#include "grid_view.h"
#include "head_matrix.h"
#include "heatmap_view.h"
#include "palette.h"
#include "qtest_main.h"
#include "stats_view.h"

using namespace attnscope;
using namespace attnscope::render;

namespace {

/// The weights of a stored group, handed out tile by tile as a run on demand would.
class StoredSource final : public AttentionSource {
 public:
  explicit StoredSource(FloatTensor attention) : m_a(std::move(attention)) {}
  std::array<int64_t, 5> shape() const override {
    return {m_a.dim(0), m_a.dim(1), m_a.dim(2), m_a.dim(3), m_a.dim(4)};
  }
  void tile(int slot, int item, int head, int q0, int q1, int k0, int k1,
            float* out) const override {
    const int64_t Tq = m_a.dim(3), Tk = m_a.dim(4);
    const float* m = m_a.data.data() + ((slot * m_a.dim(1) + item) * m_a.dim(2) + head) * Tq * Tk;
    for (int q = q0; q < q1; ++q)
      for (int k = k0; k < k1; ++k) *out++ = m[q * Tk + k];
  }
  uint64_t bytes() const override { return m_a.data.size() * 4; }

 private:
  FloatTensor m_a;
};

/// A causal head of T tokens with a sink: row 0 is all on key 0; row q > 0 puts `sink` on key 0
/// and spreads the rest evenly over keys 1..q. Every head and layer alike.
class SinkSource final : public AttentionSource {
 public:
  SinkSource(int tokens, double sink) : m_t(tokens), m_sink(sink) {}
  std::array<int64_t, 5> shape() const override { return {1, 1, 2, m_t, m_t}; }
  static double weight(int q, int k, double sink) {
    if (k > q) return 0;
    if (q == 0) return 1;
    return k == 0 ? sink : (1 - sink) / q;
  }
  void tile(int, int, int, int q0, int q1, int k0, int k1, float* out) const override {
    ++m_tiles;
    for (int q = q0; q < q1; ++q)
      for (int k = k0; k < k1; ++k) *out++ = static_cast<float>(weight(q, k, m_sink));
  }
  uint64_t bytes() const override { return 0; }
  mutable std::atomic<int> m_tiles{0};

 private:
  int m_t;
  double m_sink;
};

/// The same result with its attention moved into a source (scores dropped, as a run does).
std::shared_ptr<AttentionResult> onDemandCopy(const AttentionResult& stored) {
  auto r = std::make_shared<AttentionResult>(stored);
  for (AttentionGroup& g : r->groups) {
    g.source = std::make_shared<StoredSource>(g.attention);
    g.attention = FloatTensor();
    g.scores = FloatTensor();
  }
  return r;
}

std::shared_ptr<AttentionResult> sinkResult(int tokens, double sink = 0.5) {
  auto r = std::make_shared<AttentionResult>();
  r->modelName = "sink";
  AttentionGroup& g = r->group();
  g.source = std::make_shared<SinkSource>(tokens, sink);
  std::vector<Token> items;
  for (int i = 0; i < tokens; ++i) {
    Token t;
    t.id = i;
    t.text = t.label = "t" + std::to_string(i);
    items.push_back(t);
  }
  g.tokens.push_back(items);
  g.queryLengths.push_back(tokens);
  g.keyLengths.push_back(tokens);
  return r;
}

QImage draw(AttentionView& view, int w = 800, int h = 700) {
  ExportOptions o;
  o.width = w;
  o.height = h;
  o.dpi = 96;
  return Exporter::renderImage(view, o);
}

double colourDistance(const QColor& a, const QColor& b) {
  return std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) +
         std::abs(a.blue() - b.blue());
}

}  // namespace

class OnDemandViewTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void headMatrixReadsTheSource() {
    const auto stored = test::gpt2Like(2, 3, 40);
    const auto onDemand = onDemandCopy(*stored);
    QVERIFY(onDemand->group().onDemand());
    for (bool hide : {false, true})
      for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 3; ++h) {
          const HeadMatrix a = HeadMatrix::of(stored->group(), l, 0, h, false, hide);
          const HeadMatrix b = HeadMatrix::of(onDemand->group(), l, 0, h, false, hide);
          QVERIFY(!b.missing && !b.tooLong && !b.lazy);
          QCOMPARE(b.rows, a.rows);
          QCOMPARE(b.cols, a.cols);
          for (std::size_t i = 0; i < a.values.size(); ++i)
            QVERIFY(a.values[i] == b.values[i] ||
                    (std::isnan(a.values[i]) && std::isnan(b.values[i])));
        }
  }

  void gridAndStatisticsAgree() {
    const auto stored = test::gpt2Like(2, 3, 600);
    const auto onDemand = onDemandCopy(*stored);
    GridView a, b;
    a.setResult(stored);
    b.setResult(onDemand);
    a.setViewState(ViewState());
    b.setViewState(ViewState());
    const QImage ia = draw(a), ib = draw(b);
    QCOMPARE(ia.size(), ib.size());
    QVERIFY(ia == ib);  // pooled blockwise from recomputed rows, identical to pooling the matrix
    // The statistics: longRangeProfile's accumulator against headStatistics of the stored head.
    StatsView sa, sb;
    sa.setResult(stored);
    sb.setResult(onDemand);
    sa.setViewState(ViewState());
    sb.setViewState(ViewState());
    QCOMPARE(sb.statistics().size(), sa.statistics().size());
    for (std::size_t i = 0; i < sa.statistics().size(); ++i)
      for (int s = 0; s < 6; ++s)
        QVERIFY(std::abs(StatsView::statisticOf(sa.statistics()[i], s) -
                         StatsView::statisticOf(sb.statistics()[i], s)) < 1e-9);
  }

  void dropSinkRenormalisesTheRest() {
    const auto r = sinkResult(12, 0.6);
    HeadMatrix m = HeadMatrix::of(r->group(), 0, 0, 1, false);
    QCOMPARE(m.cols, 12);
    HeadMatrix::dropSink(m, 2);
    QCOMPARE(m.droppedSink, 2);
    QCOMPARE(m.cols, 10);
    QCOMPARE(m.colTokens.front(), 2);
    QCOMPARE(m.colLabels.front(), QStringLiteral("t2"));
    for (int q = 0; q < 12; ++q) {
      double sinkShare = 0;
      for (int k = 0; k < 2; ++k) sinkShare += SinkSource::weight(q, k, 0.6);
      for (int c = 0; c < 10; ++c) {
        const double expected =
            sinkShare < 1 ? SinkSource::weight(q, c + 2, 0.6) / (1 - sinkShare) : 0.0;
        QVERIFY2(std::abs(m.at(q, c) - expected) < 1e-6, qPrintable(QString::number(q)));
      }
    }
    // Row 5: 0.6 on the sink, 0.08 on each of keys 1..5; without keys 0 and 1: 0.08 / 0.32.
    QVERIFY(std::abs(m.at(5, 0) - 0.25) < 1e-6);
  }

  void logScaleColoursByDecades() {
    // One head with weights 1, 1e-2 and 1e-4 of the largest: on a log scale
    // (four decades) they sit at palette positions 1, 0.5 and 0; linear at 1, 0.01, 0.0001.
    // Twenty tokens: no values written into the cells.
    auto r = test::makeResult(1, 1, 20, 1, [](int, int, int, int q, int k) {
      const float v[4] = {0.8f, 0.008f, 0.00008f, 0.0f};
      return v[(q + k) % 4];
    });
    HeatmapView view;
    view.setResult(r);
    const Palette palette = Palette::named(QStringLiteral("viridis"));
    for (bool log : {false, true}) {
      ViewState s;
      s.logScale = log;
      view.setViewState(s);
      const QImage image = draw(view);
      const auto at = [&](int q, int k) {
        return image.pixelColor(view.lastCellCenter(q, k).toPoint());
      };
      const double mid = log ? 0.5 : 0.01;
      if (qEnvironmentVariableIsSet("ONDEMAND_DEBUG"))
        image.save(QStringLiteral("/tmp/lw/log%1.png").arg(log));
      QVERIFY2(colourDistance(at(0, 0), palette.colorAt(1.0)) <= 6,
               qPrintable(at(0, 0).name() + " vs " + palette.colorAt(1.0).name()));
      QVERIFY2(colourDistance(at(0, 1), palette.colorAt(mid)) <= 6,
               qPrintable(at(0, 1).name() + " vs " + palette.colorAt(mid).name()));
      QVERIFY2(colourDistance(at(0, 2), palette.colorAt(log ? 0.0 : 0.0001)) <= 6, "floor");
      // The position 0.5 colour is far from the 0.01 one: the check can fail.
      QVERIFY(colourDistance(palette.colorAt(0.5), palette.colorAt(0.01)) > 60);
    }
  }

  void longHeadsAreLazyAndPooled() {
    // T = 8192 on demand: no view allocates the head's 256 MB. HeadMatrix::fill refuses, the
    // heatmap draws a lazy matrix max-pooled to its pixels, exact where zoomed in.
    const int T = 8192;
    const auto r = sinkResult(T, 0.5);
    const HeadMatrix filled = HeadMatrix::of(r->group(), 0, 0, 0, false);
    QVERIFY(filled.tooLong && filled.missing && filled.values.empty());
    QVERIFY(tooLongOnDemand(r->group(), 0));
    QVERIFY(!tooLongOnDemand(sinkResult(4096)->group(), 0));
    HeatmapView view;
    view.resize(900, 800);
    QElapsedTimer timer;
    timer.start();
    view.setResult(r);  // the range pass: every cell of the head read once, a block at a time
    const qint64 fillMs = timer.elapsed();
    QVERIFY(view.matrix().lazy);
    QVERIFY(view.matrix().values.empty());
    QCOMPARE(view.matrix().rows, T);
    QCOMPARE(view.matrix().maxValue, 1.0f);
    timer.restart();
    const QImage image = draw(view);
    const qint64 drawMs = timer.elapsed();
    qInfo("T = %d: range pass %lld ms, pooled draw %lld ms", T, fillMs, drawMs);
    // Each pixel of the pooled image is the largest weight of its fy × fx cells, coloured.
    const HeatmapView::PooledImage& pooled = view.pooledImage();
    // (The whole matrix is visible: the first and last pixel's cells may lie under the frame.)
    QVERIFY(pooled.r0 < pooled.fy && pooled.r1 > T - pooled.fy);
    QVERIFY(pooled.fy > 1 && pooled.fx > 1);
    QCOMPARE(pooled.image.height(), (pooled.r1 - pooled.r0 + pooled.fy - 1) / pooled.fy);
    const QVector<unsigned int> lut = Palette::named(QStringLiteral("viridis")).lookupTable(256);
    int checked = 0;
    for (int y = 0; y < pooled.image.height(); y += 37)
      for (int x = 0; x < pooled.image.width(); x += 41) {
        double best = 0;
        const int q0 = pooled.r0 + y * pooled.fy, k0 = pooled.c0 + x * pooled.fx;
        for (int q = q0; q < std::min(pooled.r1, q0 + pooled.fy); ++q)
          for (int k = k0; k < std::min(pooled.c1, k0 + pooled.fx); ++k)
            best = std::max(best, SinkSource::weight(q, k, 0.5));
        const unsigned int expected = lut[static_cast<int>(best * 255.0 + 0.5)];
        QCOMPARE(pooled.image.pixel(x, y) & 0xffffffu, expected & 0xffffffu);
        ++checked;
      }
    QVERIFY(checked > 50);
    // Column 0 carries the sink (0.5) below the first row, the rest is near 0: not one colour.
    QVERIFY(pooled.image.pixel(0, 10) != pooled.image.pixel(pooled.image.width() / 2, 10));
    // A replot of the same cells reuses the pooled image.
    const int recomputes = view.pooledRecomputes();
    draw(view);
    QCOMPARE(view.pooledRecomputes(), recomputes);
    // Hover reads single cells; the sink dropped keeps the head lazy, renormalised.
    QCOMPARE(view.cellText(100, 0).section(':', -1).trimmed(), QStringLiteral("0.500"));
    ViewState s;
    s.dropSink = 1;
    view.setViewState(s);
    QVERIFY(view.matrix().lazy);
    QCOMPARE(view.matrix().droppedSink, 1);
    QCOMPARE(view.matrix().cols, T - 1);
    // Row 100 without key 0: 0.5 / 100 each over keys 1..100, renormalised to 1/100.
    QVERIFY(std::abs(view.matrix().cell(100, 0) - 0.01f) < 1e-6);
    QVERIFY(std::abs(view.matrix().cell(100, 99) - 0.01f) < 1e-6);
    QCOMPARE(view.matrix().cell(100, 100), 0.0f);
    std::vector<float> block(4 * 3);
    view.matrix().block(10, 14, 5, 8, block.data());
    for (int q = 10; q < 14; ++q)
      for (int c = 5; c < 8; ++c)
        QVERIFY(std::abs(block[(q - 10) * 3 + (c - 5)] - SinkSource::weight(q, c + 1, 0.5) / 0.5) <
                1e-6);
  }

  void otherViewsSayWhyTheyAreEmpty() {
    const auto r = sinkResult(5000);
    const QString message = missingLayerMessage(r.get(), 0);
    QVERIFY2(message.contains(QStringLiteral("recomputed on demand")), qPrintable(message));
    // Short on-demand results are not "too long".
    QVERIFY(!missingLayerMessage(sinkResult(100).get(), 0).contains(QStringLiteral("on demand")));
  }
};

ATTNSCOPE_QTEST(OnDemandViewTest)

#include "on_demand_view_test.moc"
