// SPDX-License-Identifier: GPL-3.0-or-later
// Issue 33 in the views: groups whose attention is recomputed on demand (AttentionGroup::source)
// read through HeadMatrix, the grid's pooled tiles and the statistics; past
// HeadMatrix::kMaxOnDemandCells the heatmap draws a lazy matrix; the log colour scale and the
// hidden attention sink. The sources here are plain C++ (no model): one copies a stored result
// (so both forms must agree exactly), one computes a long head from a formula.
#include <QElapsedTimer>
#include <QImage>
#include <QLabel>
#include <QThread>
#include <QtTest>

#include <atomic>
#include <cmath>
#include <memory>
#include <thread>

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

/// Whether the caller runs on the UI thread (what a view must not block on a long input).
bool onUiThread() { return QThread::currentThread() == QCoreApplication::instance()->thread(); }

/// The weights of a stored group, handed out tile by tile as a run on demand would. Counts the
/// tiles read on the UI thread and, per batch item, all tiles; delayMs sleeps in every tile (a
/// slow model).
class StoredSource final : public AttentionSource {
 public:
  explicit StoredSource(FloatTensor attention, int delayMs = 0)
      : m_a(std::move(attention)), m_delayMs(delayMs) {}
  mutable std::atomic<int> uiTiles{0};
  mutable std::atomic<int> itemTiles[2] = {{0}, {0}};
  std::array<int64_t, 5> shape() const override {
    return {m_a.dim(0), m_a.dim(1), m_a.dim(2), m_a.dim(3), m_a.dim(4)};
  }
  void tile(int slot, int item, int head, int q0, int q1, int k0, int k1,
            float* out) const override {
    if (onUiThread()) ++uiTiles;
    if (item < 2) ++itemTiles[item];
    if (m_delayMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(m_delayMs));
    const int64_t Tq = m_a.dim(3), Tk = m_a.dim(4);
    const float* m = m_a.data.data() + ((slot * m_a.dim(1) + item) * m_a.dim(2) + head) * Tq * Tk;
    for (int q = q0; q < q1; ++q)
      for (int k = k0; k < k1; ++k) *out++ = m[q * Tk + k];
  }
  uint64_t bytes() const override { return m_a.data.size() * 4; }

 private:
  FloatTensor m_a;
  int m_delayMs = 0;
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
    if (onUiThread()) ++uiTiles;
    for (int q = q0; q < q1; ++q)
      for (int k = k0; k < k1; ++k) *out++ = static_cast<float>(weight(q, k, m_sink));
  }
  uint64_t bytes() const override { return 0; }
  mutable std::atomic<int> m_tiles{0};
  mutable std::atomic<int> uiTiles{0};

 private:
  int m_t;
  double m_sink;
};

/// Every stepY-th row and stepX-th column of a SinkSource head's pooled image (sink 0.5,
/// viridis) is the colour of the largest weight of its fy × fx cells; `checked` counts them.
void expectPooledMaxima(const HeatmapView::PooledImage& pooled, int stepY, int stepX,
                        int* checked) {
  const QVector<unsigned int> lut = Palette::named(QStringLiteral("viridis")).lookupTable(256);
  for (int y = 0; y < pooled.image.height(); y += stepY)
    for (int x = 0; x < pooled.image.width(); x += stepX) {
      double best = 0;
      const int q0 = pooled.r0 + y * pooled.fy, k0 = pooled.c0 + x * pooled.fx;
      for (int q = q0; q < std::min(pooled.r1, q0 + pooled.fy); ++q)
        for (int k = k0; k < std::min(pooled.c1, k0 + pooled.fx); ++k)
          best = std::max(best, SinkSource::weight(q, k, 0.5));
      QCOMPARE(pooled.image.pixel(x, y) & 0xffffffu,
               lut[static_cast<int>(best * 255.0 + 0.5)] & 0xffffffu);
      ++*checked;
    }
}

/// The same result with its attention moved into a source (scores dropped, as a run does).
std::shared_ptr<AttentionResult> onDemandCopy(const AttentionResult& stored, int delayMs = 0) {
  auto r = std::make_shared<AttentionResult>(stored);
  for (AttentionGroup& g : r->groups) {
    g.source = std::make_shared<StoredSource>(g.attention, delayMs);
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
    int checked = 0;
    expectPooledMaxima(pooled, 37, 41, &checked);
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

  void statisticsOfLongInputsAreComputedOffTheUiThread() {
    // In a shown window, an on-demand group's profiles come from a pool thread (no tile read on
    // the UI thread), with a progress line meanwhile and no old numbers; they equal the
    // synchronous computation exactly.
    const auto stored = test::gpt2Like(2, 3, 1000);
    const auto onDemand = onDemandCopy(*stored);
    const auto& source = static_cast<const StoredSource&>(*onDemand->group().source);
    StatsView view;
    view.resize(900, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setViewState(ViewState());
    view.setResult(onDemand);
    QVERIFY(view.computing());
    QVERIFY(view.statistics().empty());  // nothing shown as if current
    QVERIFY2(view.progressText().endsWith(QStringLiteral("/ 6 heads")),
             qPrintable(view.progressText()));
    const auto* label = view.findChild<QLabel*>(QStringLiteral("statsProgress"));
    QVERIFY(label && label->isVisible());
    QTRY_VERIFY_WITH_TIMEOUT(!view.computing(), 20000);
    QVERIFY(!label->isVisible());
    QCOMPARE(source.uiTiles.load(), 0);
    const std::vector<LongRangeProfile> expected = StatsView::computeProfiles(onDemand->group(), 0);
    QCOMPARE(view.profiles().size(), expected.size());
    QCOMPARE(view.statistics().size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      for (int s = 0; s < 6; ++s)
        QCOMPARE(StatsView::statisticOf(view.statistics()[i], s),
                 StatsView::statisticOf(expected[i].statistics, s));
      QCOMPARE(view.profiles()[i].sinkShare, expected[i].sinkShare);
      QVERIFY(view.profiles()[i].distanceMass == expected[i].distanceMass);
    }
    // And the stored run's numbers (headStatistics of the whole matrix).
    for (int i = 0; i < 6; ++i) {
      const HeadStatistics direct = headStatistics(headView(stored->group(), i / 3, 0, i % 3));
      QVERIFY(std::abs(direct.entropy - view.statistics()[static_cast<std::size_t>(i)].entropy) <
              1e-9);
    }
    // An export of a view still computing draws the finished numbers.
    view.setResult(onDemandCopy(*stored));
    QVERIFY(view.computing());
    draw(view);
    QVERIFY(!view.computing());
    QCOMPARE(view.statistics().size(), expected.size());
  }

  void aNewItemCancelsTheRunningStatistics() {
    // Item 0's job is stopped within one head by the switch to item 1, and never installed: the
    // numbers shown at the end are item 1's.
    auto stored = test::makeResult(2, 3, 1000, 2, [](int l, int b, int h, int q, int k) {
      return k > q ? 0.0f : (b == 0 ? (k == 0 ? 1.0f : 0.0f) : 1.0f / (q + 1));
    });
    const auto onDemand = onDemandCopy(*stored, 2);
    const auto& source = static_cast<const StoredSource&>(*onDemand->group().source);
    const std::vector<LongRangeProfile> item1 = StatsView::computeProfiles(onDemand->group(), 1);
    const int tilesPerHead = source.itemTiles[1].load() / 6;
    QVERIFY(tilesPerHead > 1);
    StatsView view;
    view.resize(900, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setViewState(ViewState());
    view.setResult(onDemand);
    QVERIFY(view.computing());
    QTest::qWait(30);  // item 0's job is under way
    ViewState s;
    s.item = 1;
    view.setViewState(s);
    const int item0AtSwitch = source.itemTiles[0].load();
    QVERIFY(view.computing());
    // Nothing is installed until item 1's numbers are, then they are item 1's.
    QElapsedTimer timer;
    timer.start();
    while (view.computing() && timer.elapsed() < 20000) {
      QVERIFY(view.statistics().empty());
      QTest::qWait(5);
    }
    QVERIFY(!view.computing());
    QCOMPARE(view.statistics().size(), item1.size());
    for (std::size_t i = 0; i < item1.size(); ++i)
      QCOMPARE(view.statistics()[i].firstToken, item1[i].statistics.firstToken);
    QTest::qWait(100);  // anything item 0's job would still post arrives now
    QVERIFY2(source.itemTiles[0].load() - item0AtSwitch <= tilesPerHead,
             qPrintable(QStringLiteral("%1 tiles of item 0 after the switch, %2 a head")
                            .arg(source.itemTiles[0].load() - item0AtSwitch)
                            .arg(tilesPerHead)));
    QCOMPARE(view.statistics().size(), item1.size());
    for (std::size_t i = 0; i < item1.size(); ++i)
      QCOMPARE(view.statistics()[i].firstToken, item1[i].statistics.firstToken);
    // Item 0 is all on the first token: the check can tell the items apart.
    QVERIFY(std::abs(item1[0].statistics.firstToken - 1.0) > 0.5);
  }

  void theGridOnDemandShowsProgressAndCancels() {
    // A shown grid of an on-demand group pools on a pool thread with "n / 6 heads"; another item
    // stops the running job within one head, and the tiles shown are the new item's.
    auto stored = test::makeResult(2, 3, 1000, 2, [](int, int b, int, int q, int k) {
      return k > q ? 0.0f : (b == 0 ? (k == 0 ? 1.0f : 0.0f) : 1.0f / (q + 1));
    });
    const auto onDemand = onDemandCopy(*stored, 2);
    const auto& source = static_cast<const StoredSource&>(*onDemand->group().source);
    GridView view;
    view.resize(900, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setViewState(ViewState());
    view.setResult(onDemand);
    QTRY_VERIFY(!view.progressText().isEmpty());
    QVERIFY2(QRegularExpression(QStringLiteral("^\\d+ / 6 heads$"))
                 .match(view.progressText())
                 .hasMatch(),
             qPrintable(view.progressText()));
    QTest::qWait(30);
    ViewState s;
    s.item = 1;
    view.setViewState(s);
    const int item0AtSwitch = source.itemTiles[0].load();
    QTRY_VERIFY_WITH_TIMEOUT(view.tilesReady(), 20000);
    QTest::qWait(100);
    QVERIFY2(source.itemTiles[0].load() - item0AtSwitch <= 2,
             qPrintable(QString::number(source.itemTiles[0].load() - item0AtSwitch)));
    QVERIFY(view.progressText().isEmpty());
    GridView sync;  // not shown: pooled in place
    sync.setResult(stored);
    sync.setViewState(s);
    QVERIFY(draw(view) == draw(sync));
    s.item = 0;
    sync.setViewState(s);
    QVERIFY(draw(view) != draw(sync));  // the items' grids differ: the check can fail
  }

  void lazyHeatmapPoolsOffTheUiThread() {
    // A shown heatmap of a head past kMaxOnDemandCells reads none of it on the UI thread: its
    // range and first image come from a pool thread ("computing…" meanwhile), and the image
    // equals pooling the head's cells directly.
    const int T = 4500;
    const auto r = sinkResult(T, 0.5);
    const auto& source = static_cast<const SinkSource&>(*r->group().source);
    HeatmapView view;
    view.resize(900, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setResult(r);
    QVERIFY(view.matrix().lazy);
    QVERIFY(!view.matrix().lazyPrepared);
    QVERIFY(view.pooledComputing());
    QTRY_VERIFY_WITH_TIMEOUT(!view.pooledComputing() && view.matrix().lazyPrepared, 20000);
    QTRY_VERIFY(!view.pooledImage().image.isNull());
    QCOMPARE(source.uiTiles.load(), 0);
    QCOMPARE(view.matrix().maxValue, 1.0f);
    const HeatmapView::PooledImage& pooled = view.pooledImage();
    QVERIFY(pooled.fy > 1 && pooled.fx > 1);
    int checked = 0;
    expectPooledMaxima(pooled, 23, 29, &checked);
    QVERIFY(checked > 100);
    // Another head: a new job; a zoom right after it cancels that one, and the image that comes
    // back is the zoomed one's.
    ViewState s;
    s.head = 1;
    view.setViewState(s);
    QVERIFY(view.pooledComputing());
    view.resize(700, 700);  // another pixel grid: the pending job's cells are stale
    QTRY_VERIFY_WITH_TIMEOUT(!view.pooledComputing() && !view.pooledImage().image.isNull(), 20000);
    QCOMPARE(view.pooledImage().head, 1);
    QCOMPARE(source.uiTiles.load(), 0);
  }

  void hiddenSpecialsAndWordsOnLazyHeads() {
    // A lazy matrix hides special tokens and merges words as HeadMatrix::of does for a stored
    // head: equal cells, read whole, in blocks before and after prepareLazy, with a sink dropped.
    const auto stored = test::gpt2Like(1, 2, 48);
    std::vector<Token>& tokens = stored->group().tokens[0];
    for (int i : {0, 17, 30}) tokens[static_cast<std::size_t>(i)].special = true;
    for (int i : {5, 6, 21, 40}) tokens[static_cast<std::size_t>(i)].text = "x";  // continues
    const auto onDemand = onDemandCopy(*stored);
    for (bool hide : {false, true})
      for (bool merge : {false, true})
        for (int drop : {0, 3}) {
          HeadMatrix a = HeadMatrix::of(stored->group(), 0, 0, 1, false, hide, merge);
          HeadMatrix::dropSink(a, drop);
          HeadMatrix b;
          HeadMatrix::fillLazy(b, onDemand->group(), 0, 0, 1, drop, hide, merge, false);
          const QString what =
              QStringLiteral("hide %1 merge %2 drop %3").arg(hide).arg(merge).arg(drop);
          QVERIFY2(b.lazy, qPrintable(what));
          QCOMPARE(b.rows, a.rows);
          QCOMPARE(b.cols, a.cols);
          QCOMPARE(b.hiddenSpecial, a.hiddenSpecial);
          QCOMPARE(b.mergedWords, a.mergedWords);
          QCOMPARE(b.droppedSink, a.droppedSink);
          QVERIFY(b.colTexts == a.colTexts && b.rowTexts == a.rowTexts);
          QCOMPARE(b.lazyIdentity(), !hide && !merge && drop == 0);
          if (hide || merge || drop) QVERIFY(b.rows < 48 || b.cols < 48);
          const auto compare = [&](const HeadMatrix& m, int r0, int r1, int c0, int c1) {
            std::vector<float> cells(static_cast<std::size_t>(r1 - r0) * (c1 - c0));
            m.block(r0, r1, c0, c1, cells.data());
            for (int r = r0; r < r1; ++r)
              for (int c = c0; c < c1; ++c) {
                const float got = cells[static_cast<std::size_t>(r - r0) * (c1 - c0) + (c - c0)];
                if (!(std::abs(got - a.at(r, c)) < 1e-6))
                  return QStringLiteral("%1: cell %2, %3: %4, stored %5")
                      .arg(what)
                      .arg(r)
                      .arg(c)
                      .arg(got)
                      .arg(a.at(r, c));
              }
            return QString();
          };
          QString error = compare(b, 0, b.rows, 0, b.cols);  // unprepared: whole rows
          QVERIFY2(error.isEmpty(), qPrintable(error));
          error = compare(b, 7, 19, 3, 11);
          QVERIFY2(error.isEmpty(), qPrintable(error));
          HeadMatrix::prepareLazy(b);
          QVERIFY(b.lazyPrepared);
          QCOMPARE(b.maxValue, a.maxValue);
          error = compare(b, 7, 19, 3, 11);  // prepared: only the tokens asked for
          QVERIFY2(error.isEmpty(), qPrintable(error));
          error = compare(b, 0, b.rows, 0, b.cols);
          QVERIFY2(error.isEmpty(), qPrintable(error));
          QVERIFY(std::abs(b.cell(b.rows - 1, 2) - a.at(a.rows - 1, 2)) < 1e-6);
        }
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
