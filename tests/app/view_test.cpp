// SPDX-License-Identifier: GPL-3.0-or-later
// The views as a user drives them, offscreen: compare's A/B selectors and tooltips, the heatmap's
// zoom limit and reset, a click in the statistics table.
#include <QApplication>
#include <QComboBox>
#include <QFile>
#include <QPainter>
#include <QPushButton>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtTest>

#include "compare_view.h"
#include "experts_view.h"
#include "exporter.h"
#include "fake_result.h"
#include "heatmap_view.h"
#include "palette.h"
#include "pipeline_view.h"
#include "qtest_main.h"
#include "stats_view.h"
#include "view_state_metatype.h"

using namespace attnscope;
using namespace attnscope::render;

class ViewTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { qRegisterMetaType<ViewState>(); }

  // Issue #32 (6): the sentence menu reads WordPiece tokens as the words typed, not glued.
  void compareSentenceMenuSpacesWordPieces() {
    CompareView view;
    view.setResult(test::wordPiecePair());
    view.setViewState(ViewState());
    auto* itemB = view.findChild<QComboBox*>(QStringLiteral("compareItemB"));
    QVERIFY(itemB);
    QCOMPARE(itemB->itemText(0), QStringLiteral("0: the cats. it was"));
  }

  // B's layer, head and sentence are chosen in the view and sent back as the view state.
  void compareSelectsHeadB() {
    CompareView view;
    view.resize(1200, 700);
    view.setResult(test::checkerboard(5, 3, 4, 3));
    ViewState s;
    view.setViewState(s);
    QSignalSpy edited(&view, &AttentionView::viewStateEdited);
    auto* layerB = view.findChild<QSpinBox*>(QStringLiteral("compareLayerB"));
    auto* headB = view.findChild<QSpinBox*>(QStringLiteral("compareHeadB"));
    auto* itemB = view.findChild<QComboBox*>(QStringLiteral("compareItemB"));
    auto* headA = view.findChild<QSpinBox*>(QStringLiteral("compareHeadA"));
    QVERIFY(layerB && headB && itemB && headA);
    QCOMPARE(layerB->maximum(), 2);
    QCOMPARE(headB->maximum(), 3);
    QCOMPARE(itemB->count(), 3);
    QCOMPARE(headB->value(), 1);  // ViewState's default B
    layerB->setValue(2);
    QCOMPARE(edited.size(), 1);
    ViewState got = edited.last().at(0).value<ViewState>();
    QCOMPARE(got.vsLayer, 2);
    QCOMPARE(got.layer, 0);
    view.setViewState(got);  // as the document would
    headB->setValue(3);
    itemB->setCurrentIndex(2);
    got = edited.last().at(0).value<ViewState>();
    QCOMPARE(got.vsLayer, 2);
    QCOMPARE(got.vsHead, 3);
    QCOMPARE(got.vsItem, 2);
    view.setViewState(got);
    headA->setValue(2);
    QCOMPARE(edited.last().at(0).value<ViewState>().head, 2);
    // The document's state shows in the selectors without echoing an edit.
    const int before = edited.size();
    ViewState fromDocument = got;
    fromDocument.vsHead = 0;
    view.setViewState(fromDocument);
    QCOMPARE(headB->value(), 0);
    QCOMPARE(edited.size(), before);
  }

  // A narrow view puts B's selectors under A's rather than demanding the width of both.
  void compareSelectorsWrapWhenNarrow() {
    CompareView view;
    view.setResult(test::checkerboard(5, 2, 4, 3));
    view.setViewState(ViewState());
    view.resize(1400, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    auto* layerA = view.findChild<QSpinBox*>(QStringLiteral("compareLayerA"));
    auto* layerB = view.findChild<QSpinBox*>(QStringLiteral("compareLayerB"));
    QTRY_COMPARE(layerA->mapTo(&view, QPoint()).y(), layerB->mapTo(&view, QPoint()).y());
    view.resize(520, 600);
    QTRY_VERIFY(layerB->mapTo(&view, QPoint()).y() > layerA->mapTo(&view, QPoint()).y());
    QVERIFY(view.minimumSizeHint().width() <= 520);
    // Everything of B is inside the view.
    auto* button = view.findChild<QPushButton*>(QStringLiteral("compareOtherSentence"));
    QVERIFY(button->mapTo(&view, QPoint(button->width(), 0)).x() <= 520);
    // The panels start below the selectors.
    QVERIFY(view.panelRect(0).top() > layerB->mapTo(&view, QPoint(0, layerB->height())).y());
  }

  void compareSameHeadOtherSentence() {
    CompareView view;
    view.setResult(test::checkerboard(5, 2, 4, 3));
    ViewState s;
    s.layer = 1;
    s.head = 2;
    s.item = 1;
    view.setViewState(s);
    QSignalSpy edited(&view, &AttentionView::viewStateEdited);
    auto* button = view.findChild<QPushButton*>(QStringLiteral("compareOtherSentence"));
    QVERIFY(button && button->isEnabled());
    button->click();
    ViewState got = edited.last().at(0).value<ViewState>();
    QCOMPARE(got.vsLayer, 1);
    QCOMPARE(got.vsHead, 2);
    QCOMPARE(got.vsItem, 2);
    view.setViewState(got);
    button->click();  // on to the next sentence, skipping A's own
    QCOMPARE(edited.last().at(0).value<ViewState>().vsItem, 0);
    // One sentence: nothing to compare it with.
    view.setResult(test::checkerboard(5, 2, 4, 1));
    QVERIFY(!button->isEnabled());
  }

  // B's tooltip names B's own tokens: another sentence has other tokens at the same place.
  void compareTooltipUsesEachPanelsLabels() {
    CompareView view;
    view.setResult(test::checkerboard(4, 1, 2, 2));
    ViewState s;
    s.vsHead = 0;
    s.vsItem = 1;
    view.setViewState(s);
    const QString text = view.cellText(2, 1);
    QVERIFY2(text.contains(QStringLiteral("A: query 't0_2' (#2) → key 't0_1' (#1)")),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("B: query 't1_2' (#2) → key 't1_1' (#1)")),
             qPrintable(text));
  }

  // Short sentences in a big window: the panels fill it rather than sitting small at the top.
  void comparePanelsUseTheSpace() {
    CompareView view;
    view.resize(1000, 900);
    view.setResult(test::checkerboard(6, 1, 2));
    view.setViewState(ViewState());
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const QRectF a = view.panelRect(0), d = view.panelRect(2);
    QVERIFY(a.isValid());
    // ATTNSCOPE_SCREENSHOTS=<dir> saves what the view looks like.
    const QString shots = qEnvironmentVariable("ATTNSCOPE_SCREENSHOTS");
    if (!shots.isEmpty()) view.grab().save(shots + QStringLiteral("/compare_stacked.png"));
    // Stacked (A, B above A − B) here: A is well over a quarter of the width, and the panels
    // together span more than half the height.
    QVERIFY2(a.width() > 1000 / 4.0, qPrintable(QString::number(a.width())));
    QVERIFY2(d.bottom() - a.top() > 900 / 2.0, qPrintable(QString::number(d.bottom() - a.top())));
    // A wide, low window keeps them side by side.
    view.resize(1600, 500);
    QTest::qWait(10);
    QVERIFY(std::abs(view.panelRect(2).top() - view.panelRect(0).top()) < 1);
    QVERIFY(view.panelRect(0).bottom() < 500);
    if (!shots.isEmpty()) view.grab().save(shots + QStringLiteral("/compare_across.png"));
  }

  void heatmapZoomOutStopsAtTheMatrixAndResets() {
    HeatmapView view;
    view.resize(600, 500);
    view.setResult(test::checkerboard(10));
    view.setViewState(ViewState());
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const QRectF full(-0.5, -0.5, 10, 10);
    QCOMPARE(view.visibleCells(), full);
    auto* plot = view.findChild<QWidget*>();
    QVERIFY(plot);
    const QPointF centre(plot->width() / 2.0, plot->height() / 2.0);
    const auto wheel = [&](int delta) {
      QWheelEvent e(centre, plot->mapToGlobal(centre), QPoint(), QPoint(0, delta), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
      QCoreApplication::sendEvent(plot, &e);
    };
    for (int i = 0; i < 5; ++i) wheel(-120);  // zoom out far
    QCOMPARE(view.visibleCells(), full);
    for (int i = 0; i < 4; ++i) wheel(120);  // zoom in
    const QRectF zoomed = view.visibleCells();
    QVERIFY2(zoomed.width() < 9.0, qPrintable(QString::number(zoomed.width())));
    QVERIFY(zoomed.left() >= -0.5 && zoomed.right() <= 9.5);
    view.resetZoom();
    QCOMPARE(view.visibleCells(), full);
    for (int i = 0; i < 4; ++i) wheel(120);
    QVERIFY(view.visibleCells().width() < 9.0);
    QSignalSpy edited(&view, &AttentionView::viewStateEdited);
    QTest::mouseDClick(plot, Qt::LeftButton, Qt::NoModifier, centre.toPoint());
    QCOMPARE(view.visibleCells(), full);
  }

  // Issue #32 (2): a long run first shows a preview that lacks the layer on screen; the whole
  // result that follows (same token count) must show the whole matrix, not QCustomPlot's default
  // range (a 6 × 6 corner) kept from the preview.
  void aResultAfterAMissingLayerShowsTheWholeMatrix() {
    constexpr int kTokens = 400;
    const auto uniform = [](int, int, int, int, int) { return 1.0f / kTokens; };
    auto preview = test::makeResult(1, 2, kTokens, 1, uniform);
    preview->group().keptLayers = {0};
    preview->group().modelLayers = 3;
    preview->preview = true;
    HeatmapView view;
    view.resize(600, 500);
    ViewState s;
    s.layer = 2;  // not in the preview
    view.setViewState(s);
    view.setResult(preview);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setResult(test::makeResult(3, 2, kTokens, 1, uniform));
    QCOMPARE(view.visibleCells(), QRectF(-0.5, -0.5, kTokens, kTokens));
  }

  // At 1600 px the table shows every column without scrolling sideways.
  // More cells than pixels: each pixel shows the largest of its cells, so one strong weight in a
  // 2048 × 2048 head stays visible (nearest-neighbour scaling would drop 5 of every 6 cells), on
  // screen size and at an export's dpi; zoomed in, the cells are drawn one by one.
  void bigHeatmapsAreMaxPooled() {
    const int T = 2048, q = 1000, k = 1500;
    auto r = test::makeResult(1, 1, T, 1, [](int, int, int, int qq, int kk) {
      return qq == q && kk == k ? 1.0f : 0.001f;
    });
    HeatmapView view;
    view.resize(600, 500);
    view.setResult(r);
    view.setViewState(ViewState());
    const QColor top = Palette::named(QStringLiteral("viridis")).colorAt(1.0);
    for (double dpi : {96.0, 150.0}) {
      QImage image(QSize(600, 500) * dpi / 96, QImage::Format_RGB32);
      image.setDevicePixelRatio(dpi / 96);
      {
        QPainter p(&image);
        view.renderTo(p, QRect(0, 0, 600, 500), QString());
      }
      const QPointF c = view.lastCellCenter(q, k) * (dpi / 96);
      int found = 0;
      for (int dy = -2; dy <= 2; ++dy)
        for (int dx = -2; dx <= 2; ++dx) {
          const QColor got =
              image.pixelColor(static_cast<int>(c.x()) + dx, static_cast<int>(c.y()) + dy);
          if (std::abs(got.red() - top.red()) + std::abs(got.green() - top.green()) +
                  std::abs(got.blue() - top.blue()) <
              12)
            ++found;
        }
      QVERIFY2(found > 0,
               qPrintable(QStringLiteral("no pixel of the strong cell at %1 dpi").arg(dpi)));
    }
  }

  void statsTableUsesItsSpace() {
    StatsView view;
    view.resize(1400, 700);
    view.setResult(test::checkerboard(5, 2, 3));
    view.setViewState(ViewState());
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QApplication::processEvents();
    auto* table = view.findChild<QTableWidget*>();
    QVERIFY(table);
    int columns = 0;
    for (int c = 0; c < table->columnCount(); ++c) columns += table->columnWidth(c);
    QVERIFY2(table->viewport()->width() >= columns,
             qPrintable(QStringLiteral("%1 < %2").arg(table->viewport()->width()).arg(columns)));
    QVERIFY(!table->horizontalScrollBar()->isVisible());
  }

  // Issue #32 (13): at the size the window gives the view at 1024×700, the head-similarity title
  // stays inside the view: nothing is drawn past its right edge, and its last 10 columns are clear.
  void statsSimilarityTitleFitsASmallWindow() {
    StatsView view;
    view.setResult(test::checkerboard(5, 2, 12));
    view.setViewState(ViewState());
    constexpr int kWidth = 640, kHeight = 360, kMargin = 200;
    QImage image(kWidth + kMargin, kHeight, QImage::Format_RGB32);
    image.fill(Qt::magenta);
    {
      QPainter p(&image);
      view.renderTo(p, QRect(0, 0, kWidth, kHeight), QString());
    }
    const QRgb background = image.pixel(kWidth - 1, kHeight - 1);
    for (int y = 0; y < kHeight; ++y) {
      for (int x = kWidth - 10; x < kWidth + kMargin; ++x) {
        const QRgb want = x < kWidth ? background : QColor(Qt::magenta).rgb();
        QVERIFY2(image.pixel(x, y) == want,
                 qPrintable(QStringLiteral("text at %1, %2").arg(x).arg(y)));
      }
    }
  }

  // One click on a row selects that head; a double-click opens it.
  // Issue 29: B from another model's run of the same text (a quantized file): the panels and the
  // per-head table compare the two models; other tokens are refused with the reason.
  void compareTakesBFromAnotherModel() {
    CompareView view;
    view.resize(900, 700);
    const auto a = test::checkerboard(4, 2, 2);
    auto b = std::make_shared<AttentionResult>(*a);
    b->modelName = "quantized";
    // Layer 1, head 1 of B looks only at the first key; everything else is unchanged.
    float* m = const_cast<float*>(b->group().headMatrix(1, 0, 1));
    for (int q = 0; q < 4; ++q)
      for (int k = 0; k < 4; ++k) m[q * 4 + k] = k == 0 ? 1.0f : 0.0f;
    view.setResult(a);
    ViewState s;
    s.layer = s.vsLayer = 1;
    s.head = s.vsHead = 1;
    view.setViewState(s);
    QVERIFY(view.headDistances().empty());
    QCOMPARE(view.distance(), 0.0);  // the same head of the same run
    view.setOtherResult(b);
    QVERIFY(view.problem().isEmpty());
    QCOMPARE(view.headDistances().size(), std::size_t(4));
    QCOMPARE(view.headDistances()[0], 0.0);
    QCOMPARE(view.headDistances()[2], 0.0);
    QVERIFY(view.headDistances()[3] > 0.1);
    QCOMPARE(view.distance(), view.headDistances()[3]);  // B's panel is the other model's head
    QVERIFY(view.summary().contains(QStringLiteral("most changed L1 H1")));
    auto other = std::make_shared<AttentionResult>(*b);
    other->group().tokens[0][2].id += 7;
    view.setOtherResult(other);
    QVERIFY(view.problem().contains(QStringLiteral("other tokens")));
    s.head = s.vsHead = 0;
    view.setViewState(s);  // another head: the pair's refusal stands (computed once per pair)
    QVERIFY(view.problem().contains(QStringLiteral("other tokens")));
    view.setOtherResult(b);
    QVERIFY(view.problem().isEmpty());
    QVERIFY(view.headDistances()[3] > 0.1);
    view.setResult(b);  // a new run of A, the same as B's: every head's distance computed anew
    QCOMPARE(view.headDistances()[3], 0.0);
    view.setOtherResult(nullptr);
    QVERIFY(view.problem().isEmpty());
    QCOMPARE(view.distance(), 0.0);
  }

  // Issue 31: the Experts view reads the router's choices cell by cell, splits each cell by the
  // chosen experts' weights, leaves dense layers grey, and says why when there is no router.
  void expertsViewDrawsTheRoutersChoices() {
    ExpertsView view;
    auto r = test::checkerboard(5, 3);
    view.setResult(r);
    view.setViewState(ViewState());
    QVERIFY(view.message().contains(QStringLiteral("No expert routing")));
    // 3 layers × 1 item × 5 tokens × top-2; layer 1 dense (-1), as Qwen3-MoE's mlp_only_layers.
    r->routerExperts = FloatTensor({3, 1, 5, 2});
    r->routerWeights = FloatTensor({3, 1, 5, 2});
    for (int l = 0; l < 3; ++l)
      for (int t = 0; t < 5; ++t) {
        const std::size_t at = (static_cast<std::size_t>(l) * 5 + t) * 2;
        const bool dense = l == 1;
        r->routerExperts.data[at] = dense ? -1.0f : static_cast<float>((l + t) % 6);
        r->routerExperts.data[at + 1] = dense ? -1.0f : static_cast<float>((l + t + 3) % 6);
        r->routerWeights.data[at] = dense ? 0.0f : 0.75f;
        r->routerWeights.data[at + 1] = dense ? 0.0f : 0.25f;
      }
    view.setResult(r);
    QVERIFY(view.message().isEmpty());
    QCOMPARE(view.layers(), 3);
    QCOMPARE(view.positions(), 5);
    QCOMPARE(view.chosen(), 2);
    QCOMPARE(view.experts(), 6);
    QCOMPARE(view.expert(2, 4, 0), (2 + 4) % 6);
    QCOMPARE(view.weight(2, 4, 1), 0.25);
    QCOMPARE(view.expert(1, 0, 0), -1);
    QVERIFY(view.cellTip(1, 0).contains(QStringLiteral("dense")));
    QVERIFY(view.cellTip(0, 3).contains(QStringLiteral("expert 3  weight 0.750")));
    QImage image(800, 500, QImage::Format_RGB32);
    {
      QPainter p(&image);
      view.renderTo(p, image.rect(), QString());
    }
    // Expert 0's colour fills the first three quarters of layer 0 at token 0 (0.75 of the weight),
    // expert 3's the last quarter; the dense layer's cells have neither.
    const QRectF cell = view.cellRect(0, 0);
    QVERIFY(cell.width() > 40);
    const auto at = [&](double fx, const QRectF& c) {
      return QColor(image.pixel(QPointF(c.left() + c.width() * fx, c.top() + 3).toPoint()));
    };
    QCOMPARE(at(0.1, cell), ExpertsView::expertColour(0));
    QCOMPARE(at(0.7, cell), ExpertsView::expertColour(0));
    QCOMPARE(at(0.9, cell), ExpertsView::expertColour(3));
    const QRectF denseCell = view.cellRect(1, 0);
    QVERIFY(at(0.5, denseCell) != ExpertsView::expertColour(1));
    QVERIFY(view.cellRect(2, 0).bottom() <= view.cellRect(1, 0).top() + 0.5);  // last layer on top
  }

  void statsClickSelectsTheHead() {
    StatsView view;
    view.resize(900, 600);
    view.setResult(test::checkerboard(5, 2, 3));
    view.setViewState(ViewState());
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    auto* table = view.findChild<QTableWidget*>();
    QVERIFY(table);
    QSignalSpy edited(&view, &AttentionView::viewStateEdited);
    QSignalSpy activated(&view, &AttentionView::headActivated);
    int row = -1;
    for (int r = 0; r < table->rowCount(); ++r)
      if (table->item(r, 0)->text() == QStringLiteral("1") &&
          table->item(r, 1)->text() == QStringLiteral("2"))
        row = r;
    QVERIFY(row >= 0);
    const QRect cell = table->visualItemRect(table->item(row, 3));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::NoModifier, cell.center());
    QCOMPARE(edited.size(), 1);
    const ViewState got = edited.last().at(0).value<ViewState>();
    QCOMPARE(got.layer, 1);
    QCOMPARE(got.head, 2);
    QCOMPARE(activated.size(), 0);
    view.setViewState(got);  // as the document would: no echo, the row stays selected
    QCOMPARE(edited.size(), 1);
    QCOMPARE(table->currentRow(), row);
    QTest::mouseDClick(table->viewport(), Qt::LeftButton, Qt::NoModifier, cell.center());
    QCOMPARE(activated.size(), 1);
  }

  // The fused layout merges its heads by permute + reshape (as the README says), not "concat".
  void fusedPipelineMergesByPermuteAndReshape() {
    auto r = test::checkerboard(4, 1, 2);
    LayerTrace t;
    t.variant = "fused";
    const int x = t.add({"x", "x", "input", {1, 4, 8}, -1, {}});
    const int qkv = t.add({"qkv", "qkv_layer(x)", "linear", {1, 4, 24}, -1, {x}});
    const int a =
        t.add({"attention", "F.softmax(scaled, dim=-1)", "softmax", {1, 2, 4, 4}, -1, {qkv}});
    const int v = t.add({"values",
                         "values.permute(0, 2, 1, 3).reshape(B, T, d_model)",
                         "merge_heads",
                         {1, 4, 8},
                         -1,
                         {a}});
    t.add({"out", "linear_layer(values)", "linear", {1, 4, 8}, -1, {v}});
    r->traces.push_back(t);
    PipelineView view;
    view.setResult(r);
    view.setViewState(ViewState());
    // The labels as the SVG export writes them: text, one <text> per label.
    QTemporaryDir dir;
    ExportOptions o;
    o.format = ImageFormat::Svg;
    const QString path = dir.filePath(QStringLiteral("pipeline.svg"));
    QCOMPARE(Exporter::exportView(view, path, o), QString());
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QString all = QString::fromUtf8(file.readAll());
    QVERIFY2(all.contains(QStringLiteral("permute + reshape")), "no permute + reshape label");
    QVERIFY2(!all.contains(QStringLiteral("concat")), "a concat label in a fused layer");
  }

 private:
};

ATTNSCOPE_QTEST(ViewTest)
#include "view_test.moc"
