// SPDX-License-Identifier: GPL-3.0-or-later
// The text view on GPT-2-like results: each token's box has the palette's colour of the weight
// it receives (sampled from the pixels), hovering and clicking choose the query, the mean and
// rollout sources equal plain loops over the attention, and a thousand tokens fit one page.
#include <QComboBox>
#include <QImage>
#include <QPainter>
#include <QSignalSpy>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QtTest>

#include "exporter.h"
#include "fake_result.h"
#include "palette.h"
#include "qtest_main.h"
#include "text_view.h"
#include "view_state_metatype.h"

using namespace attnscope;
using namespace attnscope::render;

namespace {

QImage draw(TextView& view, QSize size = QSize(1000, 700)) {
  QImage image(size, QImage::Format_RGB32);
  QPainter p(&image);
  view.renderTo(p, image.rect(), QStringLiteral("text"));
  return image;
}

bool nearColour(const QColor& a, const QColor& b, int tolerance = 2) {
  return std::abs(a.red() - b.red()) <= tolerance && std::abs(a.green() - b.green()) <= tolerance &&
         std::abs(a.blue() - b.blue()) <= tolerance;
}

// A pixel inside a token's box, above its text (the box is a pixel taller than the line).
QColor fillOf(const QImage& image, const QRectF& box) {
  return image.pixelColor(static_cast<int>(box.center().x()), static_cast<int>(box.top() + 1.5));
}

// The highest WCAG contrast between `fill` and any pixel inside `box` (its text's darkest or
// brightest pixel), the box's outer pixel left out.
double textContrast(const QImage& image, const QRectF& box, const QColor& fill) {
  double best = 1;
  for (int y = int(box.top()) + 1; y < int(box.bottom()) - 1; ++y)
    for (int x = int(box.left()) + 1; x < int(box.right()) - 1; ++x)
      best = std::max(best, Palette::contrastRatio(image.pixelColor(x, y), fill));
  return best;
}

}  // namespace

class TextViewTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    qRegisterMetaType<ViewState>();
    QVERIFY(m_dir.isValid());
  }

  // Every visible token's fill is palette(weight / row max) of the pinned query's row.
  void coloursAreTheWeights_data() {
    QTest::addColumn<QString>("palette");
    QTest::newRow("viridis") << QStringLiteral("viridis");
    QTest::newRow("magma") << QStringLiteral("magma");
  }
  void coloursAreTheWeights() {
    QFETCH(QString, palette);
    const auto result = test::gpt2Like(3, 4, 30);
    TextView view;
    view.setResult(result);
    ViewState s;
    s.layer = 2;
    s.head = 1;
    s.pinnedQuery = 20;
    s.palette = palette;
    view.setViewState(s);
    const QImage image = draw(view);
    QCOMPARE(view.lastQuery(), 20);
    const float* row = result->group().headMatrix(2, 0, 1) + 20 * 30;
    double max = 0;
    for (int k = 0; k < 30; ++k) max = std::max<double>(max, row[k]);
    QCOMPARE(view.lastMax(), max);
    const Palette p = Palette::named(palette);
    for (int k = 0; k <= 20; ++k) {
      const QColor want = p.colorAt(row[k] / max), got = fillOf(image, view.tokenRect(k));
      QVERIFY2(
          nearColour(got, want),
          qPrintable(QStringLiteral("token %1: %2, want %3").arg(k).arg(got.name(), want.name())));
    }
    // Later tokens are unseen by a causal query: no fill, the page shows through.
    for (int k = 21; k < 30; ++k) QCOMPARE(fillOf(image, view.tokenRect(k)), QColor(Qt::white));
  }

  void hoverAndClickChooseTheQuery() {
    TextView view;
    view.resize(900, 500);
    view.setResult(test::gpt2Like(1, 2, 16));
    view.setViewState(ViewState());
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const QImage before = view.grab().toImage();
    QCOMPARE(view.lastQuery(), 15);  // nothing pinned: the last token
    QTest::mouseMove(&view, view.tokenRect(6).center().toPoint());
    const QImage hovered = view.grab().toImage();
    QCOMPARE(view.lastQuery(), 6);
    QVERIFY(hovered != before);
    QSignalSpy edited(&view, &AttentionView::viewStateEdited);
    QTest::mouseClick(&view, Qt::LeftButton, {}, view.tokenRect(3).center().toPoint());
    QCOMPARE(edited.size(), 1);
    QCOMPARE(edited.last().at(0).value<ViewState>().pinnedQuery, 3);
    // The source selector sends its choice back.
    auto* source = view.findChild<QComboBox*>(QStringLiteral("textSource"));
    QVERIFY(source);
    source->setCurrentIndex(2);
    QVERIFY(edited.last().at(0).value<ViewState>().textSource == TextSource::Rollout);
  }

  void meanAndRolloutAreComputedFromTheAttention() {
    const auto result = test::gpt2Like(2, 3, 9);
    const AttentionGroup& g = result->group();
    TextView view;
    view.setResult(result);
    ViewState s;
    s.layer = 1;
    s.textSource = TextSource::MeanOverHeads;
    view.setViewState(s);
    for (int q = 0; q < 9; ++q)
      for (int k = 0; k < 9; ++k) {
        double mean = 0;
        for (int h = 0; h < 3; ++h) mean += g.headMatrix(1, 0, h)[q * 9 + k] / 3.0;
        QVERIFY(std::abs(view.value(q, k) - mean) < 1e-6);
      }
    // Rollout through layer 1: Â1 · Â0, Â = ½ mean + ½ I (rows renormalised), by plain loops.
    double hat[2][9][9];
    for (int l = 0; l < 2; ++l)
      for (int q = 0; q < 9; ++q) {
        double sum = 0;
        for (int k = 0; k < 9; ++k) {
          double mean = 0;
          for (int h = 0; h < 3; ++h) mean += g.headMatrix(l, 0, h)[q * 9 + k] / 3.0;
          hat[l][q][k] = 0.5 * mean + (q == k ? 0.5 : 0.0);
          sum += hat[l][q][k];
        }
        for (int k = 0; k < 9; ++k) hat[l][q][k] /= sum;
      }
    s.textSource = TextSource::Rollout;
    view.setViewState(s);
    QVERIFY(view.problem().isEmpty());
    for (int q = 0; q < 9; ++q)
      for (int k = 0; k < 9; ++k) {
        double v = 0;
        for (int j = 0; j < 9; ++j) v += hat[1][q][j] * hat[0][j][k];
        QVERIFY2(std::abs(view.value(q, k) - v) < 1e-6,
                 qPrintable(
                     QStringLiteral("%1 %2: %3 vs %4").arg(q).arg(k).arg(view.value(q, k)).arg(v)));
      }
  }

  // A thousand tokens on one 1200 × 900 page at a legible size, each box inside the page.
  void aThousandTokensFit() {
    TextView view;
    view.setResult(test::gpt2Like(1, 1, 1000, 4));
    view.setViewState(ViewState());
    draw(view, QSize(1200, 900));
    QCOMPARE(view.lastQuery(), 999);
    for (int k = 0; k < 1000; ++k) {
      const QRectF box = view.tokenRect(k);
      QVERIFY(box.bottom() <= 900 && box.right() <= 1200 && box.left() >= 0);
    }
    QVERIFY(view.tokenRect(0).height() >= 10);  // a 7-pixel font at least
  }

  void exportsParseWithTheirText() {
    TextView view;
    view.setResult(test::gpt2Like(1, 2, 12));
    ViewState s;
    s.pinnedQuery = 5;
    view.setViewState(s);
    for (ImageFormat f : {ImageFormat::Svg, ImageFormat::Pdf, ImageFormat::Png}) {
      ExportOptions o;
      o.format = f;
      const QString path = m_dir.filePath(QStringLiteral("text%1").arg(static_cast<int>(f)));
      QCOMPARE(Exporter::exportView(view, path, o), QString());
      QFile file(path);
      QVERIFY(file.open(QIODevice::ReadOnly));
      const QByteArray bytes = file.readAll();
      if (f == ImageFormat::Svg) {
        QVERIFY(QSvgRenderer(bytes).isValid());
        QVERIFY(bytes.contains(">w7<"));
        QVERIFY(bytes.contains("attention from"));
      } else if (f == ImageFormat::Pdf) {
        QVERIFY(bytes.startsWith("%PDF"));
      } else {
        QVERIFY(!QImage::fromData(bytes).isNull());
      }
    }
  }

  // Issue #32 (6): WordPiece tokens carry no spaces; the text view still shows the words apart
  // (a gap where the input had a space, or beside a special token) and a subword joined.
  void wordPieceWordsAreSpacedAsTyped() {
    TextView view;
    view.setResult(test::wordPiecePair());
    ViewState s;
    s.pinnedQuery = 8;
    view.setViewState(s);
    draw(view);
    const auto gap = [&](int k) {
      return view.tokenRect(k).left() - view.tokenRect(k - 1).right();
    };
    QVERIFY2(gap(1) > 2, "[CLS] | the");
    QVERIFY2(gap(2) > 2, "the | cat");
    QVERIFY2(std::abs(gap(3)) < 0.5, "cat | ##s");
    QVERIFY2(std::abs(gap(4)) < 0.5, "s | .");
    QVERIFY2(gap(5) > 2, ". | [SEP]");
    QVERIFY2(gap(7) > 2, "it | was");
  }

  // Issue #32 (7): every token's text keeps a 4.5:1 contrast with its box in every palette,
  // over the palette's whole range (the row's weights go from 0 to the maximum).
  void tokenTextKeepsItsContrast_data() {
    QTest::addColumn<QString>("palette");
    for (const QString& name : Palette::names()) QTest::newRow(qPrintable(name)) << name;
  }
  void tokenTextKeepsItsContrast() {
    QFETCH(QString, palette);
    constexpr int kTokens = 41;
    auto result =
        test::makeResult(1, 1, kTokens, 1, [](int, int, int, int, int k) { return float(k) / 40; });
    for (Token& t : result->group().tokens[0]) t.text = "Wm";  // wide, heavy strokes
    TextView view;
    view.setResult(result);
    ViewState s;
    s.pinnedQuery = kTokens - 1;
    s.palette = palette;
    view.setViewState(s);
    const QImage image = draw(view);
    const Palette p = Palette::named(palette);
    for (int k = 0; k < kTokens; ++k) {
      const QColor fill = p.colorAt(k / 40.0);
      const double contrast = textContrast(image, view.tokenRect(k), fill);
      QVERIFY2(contrast >= 4.5, qPrintable(QStringLiteral("token %1 on %2: %3:1")
                                               .arg(k)
                                               .arg(fill.name())
                                               .arg(contrast, 0, 'f', 2)));
    }
  }

  // The rule itself, over every colour map (and the diverging one) at 1001 points.
  void inkContrastsWithEveryPaletteColour() {
    QList<Palette> palettes{Palette::diverging()};
    for (const QString& name : Palette::names()) palettes << Palette::named(name);
    for (const Palette& p : palettes) {
      for (int i = 0; i <= 1000; ++i) {
        const QColor fill = p.colorAt(i / 1000.0);
        QVERIFY2(Palette::contrastRatio(Palette::inkOn(fill), fill) >= 4.5,
                 qPrintable(p.name() + QLatin1Char(' ') + fill.name()));
      }
    }
    QCOMPARE(Palette::contrastRatio(Qt::black, Qt::white), 21.0);
  }

  void crossAttentionIsRefused() {
    auto result = test::gpt2Like(1, 1, 4);
    result->group().contextTokens = result->group().tokens;
    TextView view;
    view.setResult(result);
    view.setViewState(ViewState());
    QVERIFY(view.problem().contains(QStringLiteral("cross-attention")));
    draw(view);
    QCOMPARE(view.lastQuery(), -1);
  }

 private:
  QTemporaryDir m_dir;
};

ATTNSCOPE_QTEST(TextViewTest)
#include "text_view_test.moc"
