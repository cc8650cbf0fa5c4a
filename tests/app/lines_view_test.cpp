// SPDX-License-Identifier: GPL-3.0-or-later
// The lines view (BertViz's head view) on GPT-2-like results: it draws, its threshold really
// leaves lines out (counted in the view and in the SVG), hovering a token isolates its lines,
// a click pins the query, and the head buttons send the selection back.
#include <QImage>
#include <QPainter>
#include <QSignalSpy>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include <set>

#include "exporter.h"
#include "fake_result.h"
#include "lines_view.h"
#include "palette.h"
#include "qtest_main.h"
#include "view_state_metatype.h"

using namespace attnscope;
using namespace attnscope::render;

namespace {

int distinctLineColours(const QImage& image) {
  std::set<QRgb> colours;
  for (int y = 0; y < image.height(); y += 3)
    for (int x = 0; x < image.width(); x += 3) colours.insert(image.pixel(x, y));
  return static_cast<int>(colours.size());
}

// Weights of (layer, heads) at or above `threshold` and in (0, threshold), from the result
// itself; `row`/`column` >= 0 keeps only that query or key.
std::pair<int, int> countWeights(const AttentionResult& r, int layer, const std::vector<int>& heads,
                                 double threshold, int row = -1, int column = -1) {
  const AttentionGroup& g = r.group();
  int above = 0, below = 0;
  for (int h : heads) {
    const float* a = g.headMatrix(layer, 0, h);
    for (int q = 0; q < g.queries(); ++q)
      for (int k = 0; k < g.keys(); ++k) {
        if ((row >= 0 && q != row) || (column >= 0 && k != column)) continue;
        const float w = a[q * g.keys() + k];
        if (w >= threshold)
          ++above;
        else if (w > 0)
          ++below;
      }
  }
  return {above, below};
}

QImage draw(LinesView& view, QSize size = QSize(1000, 800)) {
  QImage image(size, QImage::Format_RGB32);
  QPainter p(&image);
  view.renderTo(p, image.rect(), QStringLiteral("lines"));
  return image;
}

}  // namespace

class LinesViewTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    qRegisterMetaType<ViewState>();
    QVERIFY(m_dir.isValid());
  }

  void rendersTheSelectedHead() {
    LinesView view;
    view.setResult(test::gpt2Like(12, 12, 10));
    ViewState s;
    s.layer = 3;
    s.head = 5;
    view.setViewState(s);
    const QImage image = draw(view);
    QVERIFY2(distinctLineColours(image) > 8, "image is (nearly) blank");
    QCOMPARE(view.heads(), std::vector<int>{5});
    // Causal, 10 tokens: 55 non-zero weights, every one drawn at threshold 0.
    s.lineThreshold = 0;
    view.setViewState(s);
    draw(view);
    QCOMPARE(view.lastDrawn().lines, 55);
    // The head's colour is on the image.
    const QColor colour = Palette::categorical(5);
    bool found = false;
    const QImage again = draw(view);
    for (int y = 0; y < again.height() && !found; ++y)
      for (int x = 0; x < again.width() && !found; ++x) {
        const QColor c = again.pixelColor(x, y);
        found = std::abs(c.hue() - colour.hue()) < 6 && c.saturation() > 60;
      }
    QVERIFY(found);
  }

  // 256 tokens, every head of a layer: the threshold leaves out exactly the weights below it.
  void thresholdDropsLines() {
    const auto result = test::gpt2Like(2, 12, 256, 8, 11, 1.0f);
    LinesView view;
    view.setResult(result);
    ViewState s;
    s.layer = 1;
    for (int h = 0; h < 12; ++h) s.lineHeads.push_back(h);
    s.lineThreshold = 0.02;
    view.setViewState(s);
    draw(view, QSize(1200, 1400));
    const auto [above, below] = countWeights(*result, 1, s.lineHeads, 0.02);
    QCOMPARE(view.lastDrawn().lines, above);
    QCOMPARE(view.lastDrawn().belowThreshold, below);
    QVERIFY(below > above);  // the point of a threshold at 256 tokens
    s.lineThreshold = 0.1;
    view.setViewState(s);
    draw(view, QSize(1200, 1400));
    QCOMPARE(view.lastDrawn().lines, countWeights(*result, 1, s.lineHeads, 0.1).first);
    QVERIFY(view.lastDrawn().lines < above);
    // The SVG holds one line element per line drawn, and says what it left out.
    ExportOptions o;
    o.format = ImageFormat::Svg;
    o.width = 1200;
    o.height = 1400;
    const QString path = m_dir.filePath(QStringLiteral("lines.svg"));
    QCOMPARE(Exporter::exportView(view, path, o), QString());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray svg = f.readAll();
    QVERIFY(QSvgRenderer(svg).isValid());
    QCOMPARE(static_cast<int>(svg.count("<polyline")), view.lastDrawn().lines);
    QVERIFY(svg.contains("lines below 0.10 not drawn"));
    QVERIFY(svg.contains(">w0<") || svg.contains(">w0 <"));
  }

  // On screen the token under the mouse isolates its lines; leaving shows all again.
  void hoverIsolatesAToken() {
    const auto result = test::gpt2Like(1, 4, 12);
    LinesView view;
    view.resize(900, 700);
    view.setResult(result);
    ViewState s;
    s.lineThreshold = 0;
    view.setViewState(s);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const QImage all = view.grab().toImage();
    QCOMPARE(view.lastDrawn().lines, 78);  // 12 · 13 / 2
    QTest::mouseMove(&view, view.tokenRect(false, 7).center().toPoint());
    const QImage one = view.grab().toImage();
    QCOMPARE(view.lastDrawn().focusRow, 7);
    QVERIFY(!view.lastDrawn().focusKey);
    QCOMPARE(view.lastDrawn().lines, 8);  // query 7 sees keys 0..7
    QVERIFY(one != all);
    // Off the labels every line is back, drawn as before (from the kept image).
    QTest::mouseMove(&view, QPoint(view.width() / 2, view.height() - 5));
    QCOMPARE(view.grab().toImage(), all);
    QCOMPARE(view.lastDrawn().lines, 78);
    QCOMPARE(view.lastDrawn().focusRow, -1);
    // A key isolates the lines into it: key 4 is seen by queries 4..11.
    QTest::mouseMove(&view, view.tokenRect(true, 4).center().toPoint());
    view.grab();
    QVERIFY(view.lastDrawn().focusKey);
    QCOMPARE(view.lastDrawn().lines, countWeights(*result, 0, {0}, 1e-30, -1, 4).first);
    QCOMPARE(view.lastDrawn().lines, 8);
    // A click on a query pins it: the document gets it as the pinned query.
    QSignalSpy edited(&view, &AttentionView::viewStateEdited);
    QTest::mouseClick(&view, Qt::LeftButton, {}, view.tokenRect(false, 2).center().toPoint());
    QCOMPARE(edited.size(), 1);
    const ViewState pinned = edited.last().at(0).value<ViewState>();
    QCOMPARE(pinned.pinnedQuery, 2);
    // Pinned and not hovered (an export): only its lines.
    view.setViewState(pinned);
    draw(view);
    QCOMPARE(view.lastDrawn().focusRow, 2);
    QCOMPARE(view.lastDrawn().lines, 3);
  }

  void headButtonsSendTheSelection() {
    LinesView view;
    view.setResult(test::gpt2Like(2, 6, 5));
    ViewState s;
    s.head = 2;
    view.setViewState(s);
    QSignalSpy edited(&view, &AttentionView::viewStateEdited);
    auto* all = view.findChild<QToolButton*>(QStringLiteral("linesAllHeads"));
    auto* head4 = view.findChild<QToolButton*>(QStringLiteral("linesHead4"));
    QVERIFY(all && head4);
    QVERIFY(view.findChild<QToolButton*>(QStringLiteral("linesHead2"))->isChecked());
    head4->click();  // adds head 4 to the selected head 2
    QCOMPARE(edited.last().at(0).value<ViewState>().lineHeads, (std::vector<int>{2, 4}));
    all->click();
    s = edited.last().at(0).value<ViewState>();
    QCOMPARE(s.lineHeads, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    view.setViewState(s);
    QCOMPARE(view.heads().size(), std::size_t{6});
    QCOMPARE(view.matrices().size(), std::size_t{6});
  }

  // Hidden special tokens leave their rows and columns out, as in the heatmap.
  void hidesSpecialTokens() {
    auto result = test::gpt2Like(1, 2, 6);
    result->group().tokens[0][0].special = true;
    result->group().tokens[0][0].label = "<s>";
    LinesView view;
    view.setResult(result);
    ViewState s;
    s.hideSpecial = true;
    view.setViewState(s);
    QCOMPARE(view.matrices().front().rows, 5);
    QCOMPARE(view.matrices().front().rowLabels.front(), QStringLiteral("\u2423w1"));
  }

 private:
  QTemporaryDir m_dir;
};

ATTNSCOPE_QTEST(LinesViewTest)
#include "lines_view_test.moc"
