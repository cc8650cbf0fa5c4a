// SPDX-License-Identifier: GPL-3.0-or-later
// Renders every view into real files and checks what came out: decodable, not blank, the right
// colours where the maths says so.
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QFontMetricsF>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMultiMap>
#include <QPainter>
#include <QProcess>
#include <QSet>
#include <QStandardPaths>
#include <QSvgRenderer>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtTest>

#include <cmath>
#include <memory>
#include <random>

#include "attnscope/npy.h"
#include "compare_view.h"
#include "exporter.h"
#include "grid_view.h"
#include "heatmap_view.h"
#include "logit_lens_view.h"
#include "palette.h"
#include "pipeline_view.h"
#include "qtest_main.h"
#include "render_style.h"
#include "stats_view.h"
#include "step_view.h"
#include "view_factory.h"
#include "view_subject.h"

using namespace attnscope;
using namespace attnscope::render;

namespace {

// Random causal (or full) attention, rows normalised over the allowed keys, plus a per-head trace.
std::shared_ptr<AttentionResult> fakeResult(int layers, int heads, int tokens, bool causal,
                                            int batch = 1, unsigned seed = 7) {
  auto r = std::make_shared<AttentionResult>();
  r->modelName = "fake";
  r->group().attention = FloatTensor({layers, batch, heads, tokens, tokens});
  r->group().scores = FloatTensor({layers, batch, heads, tokens, tokens});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.01f, 1.0f);
  for (int l = 0; l < layers; ++l) {
    for (int b = 0; b < batch; ++b) {
      for (int h = 0; h < heads; ++h) {
        float* a = const_cast<float*>(r->group().headMatrix(l, b, h));
        float* s = const_cast<float*>(r->group().scoreMatrix(l, b, h));
        for (int q = 0; q < tokens; ++q) {
          float sum = 0;
          for (int k = 0; k < tokens; ++k) {
            const bool allowed = !causal || k <= q;
            const float v = allowed ? u(rng) : 0.0f;
            a[q * tokens + k] = v;
            s[q * tokens + k] = allowed ? std::log(v) : -std::numeric_limits<float>::infinity();
            sum += v;
          }
          for (int k = 0; k < tokens; ++k) a[q * tokens + k] /= sum;
        }
      }
    }
  }
  for (int b = 0; b < batch; ++b) {
    std::vector<Token> items;
    for (int i = 0; i < tokens; ++i) {
      Token t;
      t.id = i;
      t.text = "tok" + std::to_string(i);
      t.label = t.text;
      items.push_back(t);
    }
    r->group().tokens.push_back(items);
    r->group().queryLengths.push_back(tokens);
    r->group().keyLengths.push_back(tokens);
  }
  for (int l = 0; l < layers; ++l) {
    LayerTrace t;
    t.variant = "per-head";
    const int x = t.add({"x", "x", "input", {1, tokens, 64}, -1, {}});
    std::vector<int> outs;
    for (int h = 0; h < heads; ++h) {
      const int k = t.add({"k", "heads[h].key(x)", "linear", {1, tokens, 16}, h, {x}});
      const int q = t.add({"q", "heads[h].query(x)", "linear", {1, tokens, 16}, h, {x}});
      const int v = t.add({"v", "heads[h].value(x)", "linear", {1, tokens, 16}, h, {x}});
      const int w =
          t.add({"wei", "q @ k.transpose(-2, -1)", "matmul", {1, tokens, tokens}, h, {q, k}});
      const int a =
          t.add({"attention", "F.softmax(wei, dim=-1)", "softmax", {1, tokens, tokens}, h, {w}});
      outs.push_back(t.add({"out", "wei @ v", "matmul", {1, tokens, 16}, h, {a, v}}));
    }
    const int c = t.add({"concat", "torch.cat(...)", "concat", {1, tokens, 64}, -1, outs});
    t.add({"out", "proj(out)", "linear", {1, tokens, 64}, -1, {c}});
    r->traces.push_back(t);
  }
  return r;
}

int distinctColours(const QImage& image) {
  QSet<QRgb> colours;
  const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
  for (int y = 0; y < rgb.height(); y += 2)
    for (int x = 0; x < rgb.width(); x += 2) colours.insert(rgb.pixel(x, y));
  return colours.size();
}

bool near(QColor a, QColor b, int tolerance) {
  return std::abs(a.red() - b.red()) <= tolerance && std::abs(a.green() - b.green()) <= tolerance &&
         std::abs(a.blue() - b.blue()) <= tolerance;
}

}  // namespace

class RenderTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { QVERIFY(m_dir.isValid()); }

  // The Step view's caption gives an unlikely sampled token's probability, not "p 0.000".
  void stepCaptionProbabilities() {
    using attnscope::render::StepView;
    QCOMPARE(StepView::probabilityText(0.5), QStringLiteral("0.500"));
    QCOMPARE(StepView::probabilityText(0.0012), QStringLiteral("0.001"));
    QCOMPARE(StepView::probabilityText(0.00018), QStringLiteral("0.00018"));
    QCOMPARE(StepView::probabilityText(2.5e-7), QStringLiteral("2.5e-07"));
    QCOMPARE(StepView::probabilityText(0.0), QStringLiteral("0.000"));
  }

  void stateAndParsing() {
    ViewState a, b;
    QVERIFY(a == b);
    b.pinnedQuery = 3;
    QVERIFY(a != b);
    for (ViewKind k : {ViewKind::Heatmap, ViewKind::Grid, ViewKind::Compare, ViewKind::Stats,
                       ViewKind::Pipeline, ViewKind::Lines, ViewKind::Text, ViewKind::QueryKey,
                       ViewKind::Ablation, ViewKind::LogitLens}) {
      ViewKind parsed;
      QVERIFY(parseViewKind(toString(k), &parsed));
      QVERIFY(parsed == k);
      std::unique_ptr<AttentionView> view(createView(k));
      QVERIFY(view->kind() == k);
    }
    ViewKind unused;
    QVERIFY(!parseViewKind(QStringLiteral("pie"), &unused));
    ImageFormat f;
    QVERIFY(parseImageFormat(QStringLiteral("SVG"), &f) && f == ImageFormat::Svg);
    QVERIFY(!parseImageFormat(QStringLiteral("gif"), &f));
  }

  // The logit lens view reads cell (layer, position) of the selected item from [L, B, T, k], draws
  // the last layer on top and names the kept tokens on hover; a click opens the cell's whole
  // distribution (every kept token, the rest's mass and the entropy); without a lens it says why.
  void logitLensViewReadsItsCells() {
    const int L = 3, T = 5, k = 2;
    auto r = std::make_shared<AttentionResult>();
    r->group().attention = FloatTensor({L, 1, 1, T, T});
    r->group().tokens.resize(1);
    for (int t = 0; t < T; ++t) {
      Token tok;
      tok.id = t;
      tok.label = "in" + std::to_string(t);
      r->group().tokens[0].push_back(tok);
    }
    r->logitLensIds = FloatTensor({L, 1, T, k});
    r->logitLensProbs = FloatTensor({L, 1, T, k});
    r->logitLensNext = FloatTensor({L, 1, T});
    r->logitLensEntropy = FloatTensor({L, 1, T});
    r->logitLensEntropy.data[1 * T + 2] = static_cast<float>(std::log(3.0));
    for (int l = 0; l < L; ++l)
      for (int t = 0; t < T; ++t)
        for (int i = 0; i < k; ++i) {
          const std::size_t at = (static_cast<std::size_t>(l) * T + t) * k + i;
          r->logitLensIds.data[at] = static_cast<float>(100 * l + 10 * t + i);
          r->logitLensProbs.data[at] = 0.5f / static_cast<float>(i + 1);
          Token tok;
          tok.id = 100 * l + 10 * t + i;
          tok.label = "w" + std::to_string(tok.id);
          r->logitLensTokens.push_back(tok);
        }
    std::sort(r->logitLensTokens.begin(), r->logitLensTokens.end(),
              [](const Token& a, const Token& b) { return a.id < b.id; });
    LogitLensView view;
    view.resize(600, 300);
    view.setResult(r);
    QVERIFY(view.message().isEmpty());
    QCOMPARE(view.layers(), L);
    QCOMPARE(view.positions(), T);
    QCOMPARE(view.topId(2, 4), int64_t{240});
    QCOMPARE(view.topId(1, 3, 1), int64_t{131});
    QCOMPARE(view.topProbability(0, 2, 1), 0.25);
    QCOMPARE(view.cellText(2, 1), QStringLiteral("w210"));
    QVERIFY(view.cellTip(1, 2).contains(QStringLiteral("w121")));
    QCOMPARE(view.topId(3, 0), int64_t{-1});
    QImage image(600, 300, QImage::Format_ARGB32);
    QPainter painter(&image);
    view.renderTo(painter, image.rect(), QString());
    painter.end();
    QVERIFY(view.cellRect(2, 0).bottom() <= view.cellRect(1, 0).top() + 1e-6);
    QVERIFY(view.cellRect(0, 0).left() < view.cellRect(0, 1).left());
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.repaint();
    QVERIFY(!view.distributionPanel());
    QTest::mouseClick(&view, Qt::LeftButton, {}, view.cellRect(1, 2).center().toPoint());
    QVERIFY(view.distributionPanel() && view.distributionPanel()->isVisible());
    QTableWidget* list = view.distributionTable();
    QCOMPARE(list->rowCount(), k);
    QCOMPARE(list->item(0, 1)->data(Qt::UserRole).toLongLong(), 120LL);
    QCOMPARE(list->item(1, 1)->text(), QStringLiteral("w121"));
    QCOMPARE(list->item(1, 2)->data(Qt::UserRole).toDouble(), 0.25);
    QCOMPARE(view.entropy(1, 2), static_cast<double>(static_cast<float>(std::log(3.0))));
    const QString heading = view.distributionHeading();
    QVERIFY2(heading.contains(QStringLiteral("Layer 1 at 'in2' (position 2)")) &&
                 heading.contains(QStringLiteral("Entropy 1.099 nats")) &&
                 heading.contains(QStringLiteral("3.0 equally likely")) &&
                 heading.contains(QStringLiteral("rest of the vocabulary: 25.0%")),
             qPrintable(heading));
    view.distributionPanel()->hide();
    view.hide();
    r->logitLensIds = FloatTensor();
    view.setResult(r);
    QVERIFY(view.message().contains(QStringLiteral("causal language models")));
  }

  void everyViewRendersToPng_data() {
    QTest::addColumn<int>("kind");
    for (ViewKind k : {ViewKind::Heatmap, ViewKind::Grid, ViewKind::Compare, ViewKind::Stats,
                       ViewKind::Pipeline, ViewKind::Lines, ViewKind::Text})
      QTest::newRow(toString(k).toLatin1().constData()) << static_cast<int>(k);
  }
  void everyViewRendersToPng() {
    QFETCH(int, kind);
    std::unique_ptr<AttentionView> view(createView(static_cast<ViewKind>(kind)));
    view->setResult(fakeResult(2, 4, 10, true));
    view->setViewState(ViewState());
    ExportOptions o;
    o.width = 800;
    o.height = 600;
    o.dpi = 144;
    o.title = QStringLiteral("test");
    const QString path = m_dir.filePath(toString(view->kind()) + QStringLiteral(".png"));
    QCOMPARE(Exporter::exportView(*view, path, o), QString());
    QImage image(path);
    QVERIFY(!image.isNull());
    QCOMPARE(image.size(), QSize(1200, 900));  // 800×600 at 144/96
    QVERIFY2(distinctColours(image) > 8, "image is (nearly) blank");
  }

  void causalUpperTriangleHasZeroColour_data() {
    QTest::addColumn<int>("tokens");
    QTest::addColumn<QString>("palette");
    QTest::newRow("annotated viridis") << 8 << QStringLiteral("viridis");
    QTest::newRow("long magma") << 24 << QStringLiteral("magma");
    QTest::newRow("greyscale") << 12 << QStringLiteral("greyscale");
  }
  void causalUpperTriangleHasZeroColour() {
    QFETCH(int, tokens);
    QFETCH(QString, palette);
    HeatmapView view;
    view.setResult(fakeResult(1, 2, tokens, true));
    ViewState s;
    s.palette = palette;
    view.setViewState(s);
    ExportOptions o;
    o.width = 900;
    o.height = 800;
    o.dpi = 96;
    const QImage image = Exporter::renderImage(view, o);
    const QColor zero = Palette::named(palette).colorAt(0);
    int lowerDiffers = 0;
    for (int q = 0; q < tokens; ++q) {
      for (int k = 0; k < tokens; ++k) {
        const QPoint p = view.lastCellCenter(q, k).toPoint();
        QVERIFY(image.rect().contains(p));
        const QColor c = image.pixelColor(p);
        if (k > q) {
          QVERIFY2(near(c, zero, 2), qPrintable(QStringLiteral("cell (%1,%2) is %3, expected %4")
                                                    .arg(q)
                                                    .arg(k)
                                                    .arg(c.name(), zero.name())));
        } else if (!near(c, zero, 2)) {
          ++lowerDiffers;
        }
      }
    }
    // The check can fail: the lower triangle carries real weights and must not look like zero.
    QVERIFY(lowerDiffers > tokens * (tokens + 1) / 4);
  }

  void heatmapHoverTextAndScores() {
    HeatmapView view;
    auto r = fakeResult(1, 1, 4, true);
    view.setResult(r);
    view.setViewState(ViewState());
    const float w = r->group().headMatrix(0, 0, 0)[1 * 4 + 0];
    QCOMPARE(view.cellText(1, 0),
             QStringLiteral("query 'tok1' (#1) → key 'tok0' (#0): %1").arg(w, 0, 'f', 3));
    ViewState s;
    s.showScores = true;
    view.setViewState(s);
    QVERIFY(view.matrix().scores);
    QVERIFY(view.matrix().hasMasked);
    QVERIFY(std::isnan(view.matrix().at(0, 3)));
    QVERIFY(view.cellText(0, 3).contains(QStringLiteral("masked")));
  }

  // DeBERTa's scores are c2c + c2p + p2c (AttentionGroup::scoreTerms): the heatmap's scores view
  // shows one term when the view state names it, the sum otherwise (and for an unknown name).
  void heatmapShowsOneScoreTerm() {
    auto r = fakeResult(1, 1, 4, true);
    AttentionGroup& g = r->group();
    for (const char* name : {"c2c", "c2p"}) {
      ScoreTerm t{name, FloatTensor(g.scores.shape)};
      for (std::size_t i = 0; i < t.values.data.size(); ++i)
        t.values.data[i] = static_cast<float>(i) + (name[2] == 'c' ? 0.25f : 0.5f);
      g.scoreTerms.push_back(std::move(t));
    }
    QCOMPARE(scoreTermIndex(g, QStringLiteral("c2p")), 1);
    QCOMPARE(scoreTermIndex(g, QStringLiteral("p2c")), -1);
    QCOMPARE(scoreTermIndex(g, QString()), -1);
    HeatmapView view;
    view.setResult(r);
    ViewState s;
    s.showScores = true;
    s.scoreTerm = QStringLiteral("c2p");
    view.setViewState(s);
    QVERIFY(view.matrix().scores);
    QCOMPARE(view.matrix().at(1, 2), g.termMatrix(1, 0, 0, 0)[1 * 4 + 2]);
    QCOMPARE(view.matrix().at(1, 2), 6.5f);
    QCOMPARE(viewSubject(ViewKind::Heatmap, s, false, false),
             QStringLiteral("layer 0, head 0 · scores' c2p term"));
    s.scoreTerm = QStringLiteral("p2c");  // not held: the sum
    view.setViewState(s);
    QCOMPARE(view.matrix().at(1, 0), g.scoreMatrix(0, 0, 0)[1 * 4 + 0]);
  }

  // A pair [CLS] a b [SEP] c [SEP]: hiding the specials keeps a, b, c and renormalises each row
  // over them; checked against the sums written out here.
  void hiddenSpecialTokensAreRenormalised() {
    auto r = fakeResult(2, 3, 6, false);
    auto& tokens = r->group().tokens[0];
    for (int i : {0, 3, 5}) tokens[static_cast<std::size_t>(i)].special = true;
    for (int i : {4, 5}) tokens[static_cast<std::size_t>(i)].segment = 1;
    const HeadMatrix all = HeadMatrix::of(r->group(), 1, 0, 2, false);
    QCOMPARE(all.rows, 6);
    QCOMPARE(all.rowSegmentStart, 4);
    QCOMPARE(all.colSegmentStart, 4);
    QCOMPARE(all.hiddenSpecial, 0);
    const HeadMatrix m = HeadMatrix::of(r->group(), 1, 0, 2, false, true);
    const std::vector<int> kept = {1, 2, 4};
    QCOMPARE(m.rows, 3);
    QCOMPARE(m.cols, 3);
    QCOMPARE(m.hiddenSpecial, 3);
    QCOMPARE(m.rowTokens, kept);
    QCOMPARE(m.colLabels, QStringList({"tok1", "tok2", "tok4"}));
    QCOMPARE(m.rowSegmentStart, 2);  // tok4 is the first of segment 1 that is shown
    const float* raw = r->group().headMatrix(1, 0, 2);
    for (int q = 0; q < 3; ++q) {
      double sum = 0;
      for (int k : kept) sum += raw[kept[static_cast<std::size_t>(q)] * 6 + k];
      double rowSum = 0;
      for (int k = 0; k < 3; ++k) {
        const double expected =
            raw[kept[static_cast<std::size_t>(q)] * 6 + kept[static_cast<std::size_t>(k)]] / sum;
        QVERIFY(std::abs(m.at(q, k) - expected) < 1e-6);
        rowSum += m.at(q, k);
      }
      QVERIFY(std::abs(rowSum - 1.0) < 1e-5);
    }
    // Scores are left out, not renormalised.
    const HeadMatrix scores = HeadMatrix::of(r->group(), 1, 0, 2, true, true);
    QCOMPARE(scores.at(0, 1), r->group().scoreMatrix(1, 0, 2)[1 * 6 + 2]);
    QVERIFY(hasSpecialTokens(r->group(), 0));

    // The heatmap pins by token position, so the pin survives hiding and showing the specials.
    HeatmapView view;
    view.setResult(r);
    ViewState s;
    s.hideSpecial = true;
    s.pinnedQuery = 4;
    view.setViewState(s);
    QCOMPARE(view.matrix().rowOfToken(4), 2);
    QVERIFY(view.cellText(2, 0).contains(QStringLiteral("'tok4' (#4)")));
    // And the export says what it shows.
    const QString png = m_dir.filePath("hidden.png");
    ExportOptions o;
    o.format = ImageFormat::Png;
    o.title = QStringLiteral("pair");
    QVERIFY(Exporter::exportView(view, png, o).isEmpty());
    QVERIFY(!QImage(png).isNull());
  }

  // The grid hides the same tokens and draws its mean over the renormalised heads.
  // Grouped-query heads: 6 query heads reading 2 key/value heads are bracketed in threes.
  void gridMarksSharedKeyValueHeads() {
    auto r = fakeResult(2, 6, 5, true);
    GridView grid;
    grid.setResult(r);
    QCOMPARE(grid.sharedKvGroups(), 1);
    r->group().kvHeads = 2;
    QCOMPARE(grid.sharedKvGroups(), 3);
    ExportOptions o;
    o.format = ImageFormat::Svg;
    const QString svg = m_dir.filePath("gqa.svg");
    QVERIFY(Exporter::exportView(grid, svg, o).isEmpty());
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray text = f.readAll();
    QVERIFY(text.contains("kv 0") && text.contains("kv 1") && !text.contains("kv 2"));
  }

  void gridHidesSpecialTokensToo() {
    auto r = fakeResult(1, 2, 5, false);
    r->group().tokens[0][0].special = true;
    GridView grid;
    grid.resize(600, 400);
    grid.setResult(r);
    ViewState s;
    s.hideSpecial = true;
    grid.setViewState(s);
    QImage image(600, 400, QImage::Format_ARGB32);
    QPainter painter(&image);
    grid.renderTo(painter, image.rect(), QString());
    painter.end();
    QCOMPARE(grid.shownTokens(), QSize(4, 4));
  }

  // An 80-character word is elided on the axes, whole in the tooltip, and the matrix keeps its
  // size; a 300-character one still draws a picture.
  void longLabelsAreElidedInTheMiddle() {
    QCOMPARE(axisLabel(QStringLiteral("short")), QStringLiteral("short"));
    const QString word = QString(40, QLatin1Char('a')) + QString(40, QLatin1Char('z'));
    const QString shown = axisLabel(word);
    QCOMPARE(shown.size(), kMaxLabelChars);
    QVERIFY(shown.startsWith(QStringLiteral("aaaa")) && shown.endsWith(QStringLiteral("zzzz")));
    QVERIFY(shown.contains(QChar(0x2026)));
    const QString emoji = QString::fromUtf8("\xF0\x9F\x98\x80").repeated(30);
    QCOMPARE(axisLabel(emoji).toUcs4().size(), kMaxLabelChars);  // whole characters only

    for (int length : {80, 300}) {
      auto r = fakeResult(1, 1, 6, true);
      r->group().tokens[0][2].label = std::string(static_cast<std::size_t>(length), 'w');
      HeatmapView view;
      view.setResult(r);
      view.setViewState(ViewState());
      QCOMPARE(view.matrix().rowLabels[2].size(), kMaxLabelChars);
      QVERIFY(view.cellText(2, 0).contains(QString(length, QLatin1Char('w'))));
      ExportOptions o;
      o.format = ImageFormat::Png;
      const QImage image = Exporter::renderImage(view, o);
      QVERIFY(!image.isNull());
      // The cells still take most of the width: count the columns of non-background pixels on
      // the middle row of the picture.
      const int y = image.height() / 2;
      const QRgb background = image.pixel(2, 2);
      int painted = 0;
      for (int x = 0; x < image.width(); ++x) painted += image.pixel(x, y) != background;
      QVERIFY2(painted > image.width() / 3, qPrintable(QString::number(painted)));
    }
  }

  void paddingIsCropped() {
    auto r = fakeResult(1, 1, 6, false, 2);
    r->group().queryLengths[1] = 4;
    r->group().keyLengths[1] = 4;
    r->group().tokens[1].resize(4);
    HeatmapView view;
    view.setResult(r);
    ViewState s;
    s.item = 1;
    view.setViewState(s);
    QCOMPARE(view.matrix().rows, 4);
    QCOMPARE(view.matrix().cols, 4);
  }

  void svgParses() {
    for (ViewKind k :
         {ViewKind::Heatmap, ViewKind::Grid, ViewKind::Pipeline, ViewKind::Lines, ViewKind::Text}) {
      std::unique_ptr<AttentionView> view(createView(k));
      view->setResult(fakeResult(1, 3, 8, true));
      view->setViewState(ViewState());
      ExportOptions o;
      o.format = ImageFormat::Svg;
      const QString path = m_dir.filePath(toString(k) + QStringLiteral(".svg"));
      QCOMPARE(Exporter::exportView(*view, path, o), QString());
      QSvgRenderer svg(path);
      QVERIFY(svg.isValid());
    }
  }

  void pdfIsAPdfAndRasterises() {
    std::unique_ptr<AttentionView> view(createView(ViewKind::Heatmap));
    view->setResult(fakeResult(1, 2, 8, true));
    view->setViewState(ViewState());
    ExportOptions o;
    o.format = ImageFormat::Pdf;
    const QString path = m_dir.filePath(QStringLiteral("heatmap.pdf"));
    QCOMPARE(Exporter::exportView(*view, path, o), QString());
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(file.read(4) == "%PDF");
    const QString pdftoppm = QStandardPaths::findExecutable(QStringLiteral("pdftoppm"));
    if (pdftoppm.isEmpty()) QSKIP("pdftoppm (poppler-utils) is not installed");
    const QString stem = m_dir.filePath(QStringLiteral("heatmap_pdf"));
    QCOMPARE(QProcess::execute(pdftoppm,
                               {QStringLiteral("-png"), QStringLiteral("-r"), QStringLiteral("50"),
                                QStringLiteral("-singlefile"), path, stem}),
             0);
    const QImage image(stem + QStringLiteral(".png"));
    QVERIFY(!image.isNull());
    QVERIFY(distinctColours(image) > 8);
  }

  void failedExportLeavesNoFile() {
    std::unique_ptr<AttentionView> view(createView(ViewKind::Grid));
    view->setResult(fakeResult(1, 2, 6, true));
    const QString blocker = m_dir.filePath(QStringLiteral("not_a_folder"));
    QFile f(blocker);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    for (const QString& path : {m_dir.filePath(QStringLiteral("missing/dir/out.png")),
                                blocker + QStringLiteral("/out.pdf")}) {
      ExportOptions o;
      o.format = path.endsWith(QLatin1String("pdf")) ? ImageFormat::Pdf : ImageFormat::Png;
      const QString error = Exporter::exportView(*view, path, o);
      QVERIFY(!error.isEmpty());
      QVERIFY(error.contains(QStringLiteral("cannot write")));
      QVERIFY(!QFile::exists(path));
    }
    ExportOptions bad;
    bad.width = 0;
    QVERIFY(
        !Exporter::exportView(*view, m_dir.filePath(QStringLiteral("zero.png")), bad).isEmpty());
    QVERIFY(!QFile::exists(m_dir.filePath(QStringLiteral("zero.png"))));
  }

  void dataExports() {
    auto r = fakeResult(1, 2, 3, true);
    const QString npy = m_dir.filePath(QStringLiteral("a.npy"));
    QCOMPARE(Exporter::exportAttentionNpy(*r, npy), QString());
    const FloatTensor back = readNpy(npy.toStdString());
    QCOMPARE(back.shape, r->group().attention.shape);
    QCOMPARE(back.data, r->group().attention.data);
    const QString csv = m_dir.filePath(QStringLiteral("a.csv"));
    QCOMPARE(Exporter::exportAttentionCsv(*r, csv), QString());
    QFile c(csv);
    QVERIFY(c.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = c.readAll().trimmed().split('\n');
    QCOMPARE(lines.size(), 1 + 2 * 3 * 3);
    QCOMPARE(lines[0], QByteArray("layer,item,head,query,key,weight,query_token,key_token"));
    // Row 2 is layer 0, item 0, head 0, query 0, key 1 (causal: weight 0).
    QCOMPARE(lines[2], QByteArray("0,0,0,0,1,0,\"tok0\",\"tok1\""));
    const QString json = m_dir.filePath(QStringLiteral("trace.json"));
    QCOMPARE(Exporter::exportTraceJson(*r, json), QString());
    QFile j(json);
    QVERIFY(j.open(QIODevice::ReadOnly));
    QVERIFY(j.readAll().contains("\"softmax\""));
    QVERIFY(
        !Exporter::exportTraceJson(*r, m_dir.filePath(QStringLiteral("missing/x.json"))).isEmpty());
  }

  void allHeadsOneFileEach() {
    ExportOptions o;
    o.width = 300;
    o.height = 300;
    o.dpi = 96;
    const QString dir = m_dir.filePath(QStringLiteral("heads"));
    QCOMPARE(Exporter::exportAllHeads(fakeResult(2, 3, 5, true), ViewState(), dir, o), QString());
    QCOMPARE(QDir(dir).entryList(QDir::Files).size(), 6);
    QVERIFY(QFile::exists(dir + QStringLiteral("/heatmap_L1_H2.png")));
  }

  void compareDistance() {
    CompareView view;
    auto r = fakeResult(1, 2, 6, true, 2);
    view.setResult(r);
    ViewState s;
    s.vsHead = 0;  // the same head: distance 0
    view.setViewState(s);
    QVERIFY(std::abs(view.distance()) < 1e-6);
    s.vsHead = 1;
    view.setViewState(s);
    QVERIFY(view.distance() > 0.01 && view.distance() <= 1.0);
    r->group().queryLengths[1] = 4;
    r->group().keyLengths[1] = 4;
    s.vsItem = 1;
    view.setViewState(s);
    QVERIFY(view.summary().contains(QStringLiteral("common")));
  }

  // Issue 32: square cells fill the width of a wide page; the rest of its height was left empty
  // below the panels. The drawing now sits in the middle: the empty margins above and below it
  // are about equal (measured on the image, whatever the layout code thinks).
  void compareExportIsCentredOnThePage() {
    CompareView view;
    view.setResult(fakeResult(1, 2, 12, true));
    ViewState s;
    s.vsHead = 1;
    view.setViewState(s);
    ExportOptions o;
    o.width = 1600;
    o.height = 1000;
    o.dpi = 96;
    const QImage image = Exporter::renderImage(view, o).convertToFormat(QImage::Format_RGB32);
    const QRgb background = image.pixel(image.width() - 1, image.height() - 1);
    int top = image.height(), bottom = -1;
    for (int y = 0; y < image.height(); ++y) {
      const auto* line = reinterpret_cast<const QRgb*>(image.constScanLine(y));
      for (int x = 0; x < image.width(); ++x) {
        if (line[x] != background) {
          top = std::min(top, y);
          bottom = y;
          break;
        }
      }
    }
    QVERIFY(bottom > top);
    // No title (ExportOptions::title is empty): the margins are the layout's alone.
    const int above = top, below = image.height() - 1 - bottom;
    qInfo("compare export 1600x1000: drawing rows %d-%d", top, bottom);
    QVERIFY2(
        std::abs(above - below) < image.height() / 10,
        qPrintable(
            QStringLiteral("%1 empty rows above the drawing, %2 below").arg(above).arg(below)));
  }

  void statsTableAndSimilarity() {
    StatsView view;
    view.setResult(fakeResult(2, 3, 6, true));
    view.setViewState(ViewState());
    QCOMPARE(static_cast<int>(view.statistics().size()), 6);
    QCOMPARE(static_cast<int>(view.similarity().size()), 36);
    QCOMPARE(view.similarity()[7], 1.0);  // head 1 with itself
  }

  // Issue 33: the sink share and the weight by distance of every head, against sums written out
  // here over the stored matrices, and the distance profile drawn in place of the bars.
  void statsSinkShareAndDistanceProfile() {
    StatsView view;
    const auto r = fakeResult(2, 3, 12, true);
    view.setResult(r);
    ViewState state;
    state.layer = 1;
    state.head = 2;
    view.setViewState(state);
    const AttentionGroup& g = r->group();
    QCOMPARE(static_cast<int>(view.profiles().size()), 6);
    const int T = 12;
    for (int i = 0; i < 6; ++i) {
      const float* m = g.headMatrix(i / 3, 0, i % 3);
      double sink = 0;
      std::vector<double> mass(4, 0.0);  // distances 0, 1-2, 3-6, 7-11: floor(log2(d + 1))
      for (int q = 0; q < T; ++q)
        for (int k = 0; k < T; ++k) {
          if (k < StatsView::kSinkTokens) sink += m[q * T + k] / T;
          const int b = static_cast<int>(std::floor(std::log2(std::abs(q - k) + 1.0)));
          mass[static_cast<std::size_t>(b)] += m[q * T + k] / T;
        }
      QVERIFY(std::abs(view.valueOf(i, StatsView::kSinkStatistic) - sink) < 1e-6);
      const std::vector<double>& got = view.profiles()[static_cast<std::size_t>(i)].distanceMass;
      QCOMPARE(got.size(), mass.size());
      for (std::size_t b = 0; b < mass.size(); ++b) QVERIFY(std::abs(got[b] - mass[b]) < 1e-6);
    }
    // The distance profile replaces the bar chart, chosen through the view state (as a session
    // or `export --statistic` sets it): another drawing, the selected head's line in the accent
    // colour.
    const auto draw = [&](const QString& statistic) {
      ViewState s = state;
      s.statistic = statistic;
      view.setViewState(s);
      QImage image(900, 600, QImage::Format_ARGB32);
      QPainter painter(&image);
      view.renderTo(painter, image.rect(), QString());
      return image;
    };
    const QImage bars = draw(QString());
    const QImage lines = draw(QStringLiteral("distance-profile"));
    QCOMPARE(view.statistic(), StatsView::kDistanceStatistic);
    QVERIFY(bars != lines);
    const QColor accent = RenderStyle::forExport(state).accent;
    int accentPixels = 0;
    for (int y = 0; y < lines.height(); ++y)
      for (int x = 0; x < lines.width(); ++x)
        if (QColor(lines.pixel(x, y)) == accent) ++accentPixels;
    QVERIFY2(accentPixels > 50, qPrintable(QStringLiteral("%1 accent pixels").arg(accentPixels)));
  }

  void pipelineStacksManyHeads() {
    PipelineView view;
    view.setResult(fakeResult(1, 12, 6, true));
    ViewState s;
    s.head = 9;
    view.setViewState(s);
    const auto lay = view.layoutFor(QRectF(0, 0, 1200, 800), RenderStyle::forExport(s));
    QVERIFY(lay.hiddenHeads > 0);
    QVERIFY(!lay.stack.isEmpty());
    QVERIFY(lay.laneHeads.contains(9));
    QCOMPARE(lay.laneHeads.size() + lay.hiddenHeads, 12);
    for (int i = 0; i < lay.boxes.size(); ++i)
      for (int j = i + 1; j < lay.boxes.size(); ++j)
        QVERIFY(!lay.boxes[i].rect.intersects(lay.boxes[j].rect));
    QVERIFY(PipelineView::explain(QStringLiteral("softmax")).contains(QStringLiteral("sum to 1")));
    QVERIFY(view.stepText(0).contains(QStringLiteral("PyTorch")));
  }

  // Issue 32: a real family's layer (Llama's trace, as `run --json` records it) at the window
  // sizes of a classroom and a desk. Every box holds its two lines at full height and width, no
  // arrow runs through a box it does not join (the residual stream went through the MLP's
  // column), and a diagram larger than the view scrolls and fits instead of shrinking.
  void pipelineStaysLegibleForALlamaLayer() {
    auto r = std::make_shared<AttentionResult>(*fakeResult(1, 32, 6, true));
    LayerTrace t;
    t.variant = "llama";
    const auto add = [&t](const char* name, const char* kind, std::vector<int64_t> shape,
                          std::vector<int> inputs) {
      t.add({name, std::string(name) + "(...)", kind, std::move(shape), -1, std::move(inputs)});
    };
    add("x", "input", {1, 6, 2048}, {});
    add("input_layernorm", "rmsnorm", {1, 6, 2048}, {0});
    add("q_proj", "linear", {1, 6, 2048}, {1});
    add("q", "permute", {1, 32, 6, 64}, {2});
    add("k_proj", "linear", {1, 6, 512}, {1});
    add("k", "permute", {1, 8, 6, 64}, {4});
    add("v_proj", "linear", {1, 6, 512}, {1});
    add("v", "permute", {1, 8, 6, 64}, {6});
    add("q_rot", "rotary", {1, 32, 6, 64}, {3});
    add("k_rot", "rotary", {1, 8, 6, 64}, {5});
    add("k_repeat", "repeat_kv", {1, 32, 6, 64}, {9});
    add("v_repeat", "repeat_kv", {1, 32, 6, 64}, {7});
    add("scores", "matmul", {1, 32, 6, 6}, {8, 10});
    add("scaled", "scale", {1, 32, 6, 6}, {12});
    add("masked", "mask", {1, 32, 6, 6}, {13});
    add("attention", "softmax", {1, 32, 6, 6}, {14});
    add("values", "matmul", {1, 32, 6, 64}, {15, 11});
    add("merged", "merge_heads", {1, 6, 2048}, {16});
    add("attn_out", "linear", {1, 6, 2048}, {17});
    add("residual_1", "add", {1, 6, 2048}, {0, 18});
    add("post_attention_layernorm", "rmsnorm", {1, 6, 2048}, {19});
    add("mlp_gate", "linear", {1, 6, 8192}, {20});
    add("mlp_act", "activation", {1, 6, 8192}, {21});
    add("mlp_up", "linear", {1, 6, 8192}, {20});
    add("mlp_gated", "multiply", {1, 6, 8192}, {22, 23});
    add("mlp_out", "linear", {1, 6, 2048}, {24});
    add("residual_2", "add", {1, 6, 2048}, {19, 25});
    r->traces = {t};
    PipelineView view;
    view.setResult(r);
    view.setViewState(ViewState());
    for (const QSize size : {QSize(1024, 700), QSize(1600, 1000)}) {
      view.resize(size);
      (void)view.grab();  // paints on screen, as the window does
      const PipelineView::Frame& frame = view.screenFrame();
      const RenderStyle style = RenderStyle::forWidget(view, view.viewState());
      const QFontMetricsF nm(style.font(12, true)), fm(style.font(11));
      QCOMPARE(frame.layout.boxes.size(), static_cast<int>(t.steps.size()));
      for (const PipelineView::Box& b : frame.layout.boxes) {
        const TraceStep& s = t.steps[static_cast<std::size_t>(b.step)];
        const QString name = QString::fromStdString(s.name);
        QVERIFY2(b.rect.height() >= nm.height() + fm.height(), qPrintable(name));
        QVERIFY2(b.rect.width() >= nm.horizontalAdvance(name) + 8, qPrintable(name));
        QVERIFY2(
            b.rect.width() >=
                fm.horizontalAdvance(QString::fromStdString(FloatTensor::formatShape(s.shape))) + 8,
            qPrintable(name));
        for (const PipelineView::Box& o : frame.layout.boxes)
          QVERIFY(o.step == b.step || !o.rect.intersects(b.rect));
      }
      for (const PipelineView::Arrow& a : frame.layout.arrows) {
        for (int i = 1; i < a.path.size(); ++i) {
          const QRectF seg = QRectF(a.path[i - 1], a.path[i]).normalized();
          if (seg.width() > 0.5 && seg.height() > 0.5) continue;  // a diagonal between rows
          for (const PipelineView::Box& b : frame.layout.boxes) {
            if (b.step == a.from || b.step == a.to) continue;
            QVERIFY2(!b.rect.intersects(seg.adjusted(-0.5, -0.5, 0.5, 0.5)),
                     qPrintable(QStringLiteral("%1 -> %2 runs through %3")
                                    .arg(a.from)
                                    .arg(a.to)
                                    .arg(QString::fromStdString(t.steps[b.step].name))));
          }
        }
      }
    }
    // 28 rows do not fit 700 pixels at a legible size: the view scrolls, and fits on request.
    view.resize(1024, 700);
    (void)view.grab();
    QVERIFY(view.screenFrame().content.height() > view.screenFrame().viewport.height());
    QCOMPARE(view.zoom(), 1.0);
    QWheelEvent wheel(QPointF(500, 400), view.mapToGlobal(QPointF(500, 400)), QPoint(),
                      QPoint(0, -240), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(&view, &wheel);
    (void)view.grab();
    QVERIFY(view.scrollOffset().y() > 0);
    QTest::mouseDClick(&view, Qt::LeftButton, Qt::NoModifier, QPoint(500, 400));
    (void)view.grab();
    QVERIFY(view.fitted());
    QVERIFY(view.screenFrame().content.height() <= view.screenFrame().viewport.height() + 0.5);
    view.resetZoom();
    (void)view.grab();
    QVERIFY(!view.fitted());
    QCOMPARE(view.scrollOffset(), QPointF());
  }

  // Issue 29: "the pipeline view shows the dequantize step where it happens". A Q4_K GGUF of a
  // 256-wide Llama layer (tests/reference/gguf_reference.py) run by attnscope-cli --json, its
  // trace drawn: each of the seven matrices is a "dequantize Q4_K" box of its [rows, columns],
  // with an arrow into the product that uses it and nowhere else.
  void pipelineShowsTheDequantizeStepOfAGgufFile() {
    const QString python = QStringLiteral("/usr/bin/python3");
    if (QProcess::execute(python, {QStringLiteral("-c"), QStringLiteral("import numpy")}) != 0)
      QSKIP("no numpy for gguf_reference.py");
    QTemporaryDir dir;
    const QString script =
        QStringLiteral(ATTNSCOPE_TEST_DATA) + QStringLiteral("/../reference/gguf_reference.py");
    const QString hf = dir.filePath(QStringLiteral("hf"));
    QCOMPARE(QProcess::execute(python,
                               {script, QStringLiteral("tiny_llama"), hf, QStringLiteral("256")}),
             0);
    QCOMPARE(QProcess::execute(
                 python, {script, QStringLiteral("llama"), hf, dir.path(), QStringLiteral("Q4_K")}),
             0);
    const QString json = dir.filePath(QStringLiteral("run.json"));
    QProcess cli;
    cli.start(QStringLiteral(ATTNSCOPE_CLI),
              {QStringLiteral("run"), QStringLiteral("--model"),
               dir.filePath(QStringLiteral("llama_Q4_K.gguf")), QStringLiteral("--text"),
               QStringLiteral("the cat sat on the mat"), QStringLiteral("--json"), json});
    QVERIFY(cli.waitForFinished(60000));
    QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
    QFile file(json);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QJsonArray layers =
        QJsonDocument::fromJson(file.readAll()).object().value(QStringLiteral("trace")).toArray();
    QCOMPARE(layers.size(), 1);
    LayerTrace t;
    t.variant = layers[0].toObject().value(QStringLiteral("variant")).toString().toStdString();
    int tokens = 0;
    for (const QJsonValue& v : layers[0].toObject().value(QStringLiteral("steps")).toArray()) {
      const QJsonObject o = v.toObject();
      TraceStep step;
      step.name = o.value(QStringLiteral("name")).toString().toStdString();
      step.op = o.value(QStringLiteral("op")).toString().toStdString();
      step.kind = o.value(QStringLiteral("kind")).toString().toStdString();
      for (const QJsonValue& d : o.value(QStringLiteral("shape")).toArray())
        step.shape.push_back(d.toInt());
      step.head = o.value(QStringLiteral("head")).toInt(-1);
      for (const QJsonValue& i : o.value(QStringLiteral("inputs")).toArray())
        step.inputs.push_back(i.toInt());
      if (step.kind == "softmax") tokens = static_cast<int>(step.shape.back());
      t.add(std::move(step));
    }
    QVERIFY(tokens > 1);
    auto r = std::make_shared<AttentionResult>(*fakeResult(1, 4, tokens, true));
    r->traces = {t};
    PipelineView view;
    view.setResult(r);
    view.setViewState(ViewState());
    view.resize(1600, 1000);
    (void)view.grab();
    const PipelineView::Frame& frame = view.screenFrame();
    const RenderStyle style = RenderStyle::forWidget(view, view.viewState());
    const QFontMetricsF nm(style.font(12, true)), fm(style.font(11));
    // q, k, v, o, gate, up, down: [out, in] as the file stores them (k and v: 2 heads of 64).
    QMultiMap<QString, QString> shown;  // "dequantize Q4_K [rows, cols]" -> the product it feeds
    for (const PipelineView::Box& b : frame.layout.boxes) {
      const TraceStep& s = t.steps[static_cast<std::size_t>(b.step)];
      if (s.kind != "dequantize") continue;
      const QString name = QString::fromStdString(s.name);
      const QString shape = QString::fromStdString(FloatTensor::formatShape(s.shape));
      QCOMPARE(name, QStringLiteral("dequantize Q4_K"));
      QVERIFY2(b.rect.width() >= nm.horizontalAdvance(name) + 8, qPrintable(name));
      QVERIFY2(b.rect.width() >= fm.horizontalAdvance(shape) + 8, qPrintable(shape));
      QVERIFY(view.stepText(b.step).contains(QStringLiteral("GGUF file's quantized blocks")));
      QVERIFY(view.stepText(b.step).contains(shape));
      QStringList into;
      for (const PipelineView::Arrow& a : frame.layout.arrows)
        if (a.from == b.step) into << QString::fromStdString(t.steps[a.to].name);
      QCOMPARE(into.size(), 1);
      shown.insert(name + QStringLiteral(" ") + shape, into.front());
    }
    QCOMPARE(shown.size(), 7);
    QCOMPARE(shown.values(QStringLiteral("dequantize Q4_K [256, 256]")).size(),
             5);  // q o gate up down
    QCOMPARE(shown.values(QStringLiteral("dequantize Q4_K [128, 256]")).size(), 2);  // k v
    QVERIFY(shown.values(QStringLiteral("dequantize Q4_K [256, 256]"))
                .contains(QStringLiteral("q_proj")));
    QVERIFY(shown.values(QStringLiteral("dequantize Q4_K [128, 256]"))
                .contains(QStringLiteral("k_proj")));
    QVERIFY(shown.values(QStringLiteral("dequantize Q4_K [128, 256]"))
                .contains(QStringLiteral("v_proj")));
  }

  void bigGridRendersQuickly() {
    GridView view;
    view.setResult(fakeResult(12, 12, 128, true, 1, 11));
    view.setViewState(ViewState());
    ExportOptions o;
    o.width = 1400;
    o.height = 1200;
    o.dpi = 96;
    QElapsedTimer timer;
    timer.start();
    const QImage image = Exporter::renderImage(view, o);  // includes colouring all 156 cells
    const qint64 first = timer.restart();
    const QImage again = Exporter::renderImage(view, o);
    const qint64 cached = timer.elapsed();
    qInfo("grid 12x12 heads, T=128, 1400x1200: first render %lld ms, cached %lld ms", first,
          cached);
    QVERIFY(distinctColours(image) > 8);
    // For looking at: ATTNSCOPE_RENDER_DIR=/tmp/x keeps the picture.
    if (qEnvironmentVariableIsSet("ATTNSCOPE_RENDER_DIR"))
      image.save(qEnvironmentVariable("ATTNSCOPE_RENDER_DIR") +
                 QStringLiteral("/grid_12x12_T128.png"));
    QVERIFY2(first < 2000, "a full grid render must stay interactive");
  }

  void bigGridsArePreparedOffTheUiThread() {
    // 144 heads of 256 tokens (9.4 M weights): above what the window pools in place.
    GridView view;
    view.resize(900, 800);
    view.setResult(fakeResult(12, 12, 256, true, 1, 17));
    view.setViewState(ViewState());
    const QImage waiting = view.grab().toImage();  // paintEvent: starts the job, says so
    QVERIFY(!view.tilesReady());  // the results come back through the event loop only
    QTRY_VERIFY_WITH_TIMEOUT(view.tilesReady(), 20000);
    const QImage done = view.grab().toImage();
    QVERIFY(distinctColours(done) > 8);
    QVERIFY(waiting != done);  // the first paint drew no tiles
    // A change while a job runs: its tiles are dropped, the newer state's are drawn.
    ViewState s;
    s.perHeadScale = true;
    view.setViewState(s);
    view.grab();
    QVERIFY(!view.tilesReady());
    ViewState t = s;
    t.perHeadScale = false;
    view.setViewState(t);
    view.grab();
    QTRY_VERIFY_WITH_TIMEOUT(view.tilesReady(), 20000);
    // Exports never wait: they prepare the tiles in place.
    GridView exported;
    exported.setResult(fakeResult(12, 12, 256, true, 1, 17));
    exported.setViewState(ViewState());
    ExportOptions o;
    o.width = 900;
    o.height = 800;
    QVERIFY(distinctColours(Exporter::renderImage(exported, o)) > 8);
  }

  void longSequencesKeepTheirPeaksInTheGrid() {
    // 1100 tokens in a cell of about 500 pixels: a plain downscale drops most single cells, the
    // grid's max-pooled tiles must keep the one strong weight visible (and in the mean too).
    const int tokens = 1100;
    auto r = fakeResult(1, 1, tokens, true, 1, 3);
    float* a = const_cast<float*>(r->group().headMatrix(0, 0, 0));
    std::fill(a, a + std::size_t(tokens) * tokens, 0.0f);
    a[std::size_t(701) * tokens + 301] = 1.0f;
    GridView view;
    view.setResult(r);
    view.setViewState(ViewState());
    ExportOptions o;
    o.width = 1400;
    o.height = 1200;
    o.dpi = 96;
    const QImage image = Exporter::renderImage(view, o).convertToFormat(QImage::Format_RGB32);
    const QColor peak = Palette::named(ViewState().palette).colorAt(1.0);
    int bright = 0;
    for (int y = 0; y < image.height(); ++y)
      for (int x = 0; x < image.width(); ++x) bright += near(image.pixelColor(x, y), peak, 8);
    // The colour bar's top holds the colour too; two cells add at least a pixel each.
    QImage barless = image.copy(0, 0, image.width() * 3 / 4, image.height());
    int inCells = 0;
    for (int y = 0; y < barless.height(); ++y)
      for (int x = 0; x < barless.width(); ++x) inCells += near(barless.pixelColor(x, y), peak, 8);
    QVERIFY2(
        inCells >= 2,
        qPrintable(
            QStringLiteral("%1 peak pixels in the cells, %2 in all").arg(inCells).arg(bright)));
  }

 private:
  QTemporaryDir m_dir;
};

ATTNSCOPE_QTEST(RenderTest)
#include "render_test.moc"
