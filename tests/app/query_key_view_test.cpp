// SPDX-License-Identifier: GPL-3.0-or-later
// The Q/K view on GPT-2-like results whose scores come from their query and key vectors: the
// products sum (times the scale) to the kept score, the strips carry the diverging colour of each
// value, the key defaults to the query's strongest, the selectors send their choice back, and a
// result without vectors says why it draws nothing.
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
#include "query_key_view.h"
#include "view_state_metatype.h"

using namespace attnscope;
using namespace attnscope::render;

namespace {

QImage draw(QueryKeyView& view, QSize size = QSize(1000, 700)) {
  QImage image(size, QImage::Format_RGB32);
  QPainter p(&image);
  view.renderTo(p, image.rect(), QStringLiteral("qk"));
  return image;
}

}  // namespace

class QueryKeyViewTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    qRegisterMetaType<ViewState>();
    QVERIFY(m_dir.isValid());
  }

  void productsSumToTheScore() {
    const auto result = test::gpt2Like(4, 12, 20, 64);
    const AttentionGroup& g = result->group();
    QueryKeyView view;
    view.setResult(result);
    ViewState s;
    s.layer = 2;
    s.head = 7;
    s.pinnedQuery = 15;
    s.pinnedKey = 4;
    view.setViewState(s);
    const QueryKeyProducts& p = view.products();
    QVERIFY(p.valid());
    QCOMPARE(p.query, 15);
    QCOMPARE(p.key, 4);
    QCOMPARE(static_cast<int>(p.products.size()), 64);
    double sum = 0;
    for (int d = 0; d < 64; ++d) {
      const double want = double(g.queryVector(2, 0, 7, 15)[d]) * g.keyVector(2, 0, 7, 4)[d];
      QCOMPARE(p.products[static_cast<std::size_t>(d)], want);
      sum += p.products[static_cast<std::size_t>(d)];
    }
    QVERIFY(std::abs(p.sum - sum) < 1e-9);
    QCOMPARE(p.scale, 1.0 / 8.0);
    const float kept = g.scoreMatrix(2, 0, 7)[15 * 20 + 4];
    QCOMPARE(p.score, static_cast<double>(kept));
    QVERIFY(std::abs(p.sum * p.scale - kept) < 1e-5);
    QCOMPARE(p.weight, static_cast<double>(g.headMatrix(2, 0, 7)[15 * 20 + 4]));
    QVERIFY(!p.masked);
    // A later key is masked for a causal query.
    s.pinnedKey = 18;
    view.setViewState(s);
    QVERIFY(view.products().masked);
  }

  // Each strip cell is diverging(0.5 + 0.5 v / max|v|), q and k on one scale.
  void stripsCarryTheValues() {
    const auto result = test::gpt2Like(1, 2, 6, 16);
    QueryKeyView view;
    view.setResult(result);
    ViewState s;
    s.pinnedQuery = 5;
    s.pinnedKey = 2;
    view.setViewState(s);
    const QImage image = draw(view);
    const QueryKeyProducts& p = view.products();
    double vmax = 0, pmax = 0;
    for (int d = 0; d < 16; ++d) {
      vmax = std::max({vmax, std::abs(double(p.q[d])), std::abs(double(p.k[d]))});
      pmax = std::max(pmax, std::abs(p.products[d]));
    }
    const Palette diverging = Palette::diverging();
    for (int row = 0; row < 3; ++row) {
      const QRectF strip = view.stripRect(row);
      QVERIFY(!strip.isEmpty());
      for (int d = 0; d < 16; ++d) {
        const double v = row == 0 ? p.q[d] : row == 1 ? p.k[d] : p.products[d];
        const double m = row < 2 ? vmax : pmax;
        const QColor want = diverging.colorAt(0.5 + 0.5 * v / m);
        const QColor got =
            image.pixelColor(static_cast<int>(strip.left() + (d + 0.5) * strip.width() / 16),
                             static_cast<int>(strip.center().y()));
        QVERIFY2(std::abs(got.red() - want.red()) <= 3 &&
                     std::abs(got.green() - want.green()) <= 3 &&
                     std::abs(got.blue() - want.blue()) <= 3,
                 qPrintable(QStringLiteral("row %1 dim %2: %3 want %4")
                                .arg(row)
                                .arg(d)
                                .arg(got.name(), want.name())));
      }
    }
  }

  void defaultsAndSelectors() {
    const auto result = test::gpt2Like(1, 1, 7, 8);
    QueryKeyView view;
    view.setResult(result);
    view.setViewState(ViewState());
    // The last token, and its strongest key.
    const float* row = result->group().headMatrix(0, 0, 0) + 6 * 7;
    const int best = static_cast<int>(std::max_element(row, row + 7) - row);
    QCOMPARE(view.products().query, 6);
    QCOMPARE(view.products().key, best);
    QSignalSpy edited(&view, &AttentionView::viewStateEdited);
    auto* query = view.findChild<QComboBox*>(QStringLiteral("qkQuery"));
    auto* key = view.findChild<QComboBox*>(QStringLiteral("qkKey"));
    QVERIFY(query && key);
    QCOMPARE(query->count(), 8);  // "last token" and the seven tokens
    query->setCurrentIndex(query->findData(3));
    QCOMPARE(edited.last().at(0).value<ViewState>().pinnedQuery, 3);
    key->setCurrentIndex(key->findData(1));
    QCOMPARE(edited.last().at(0).value<ViewState>().pinnedKey, 1);
  }

  void withoutVectorsItSaysWhy() {
    auto result = test::gpt2Like(1, 1, 4);
    result->group().queryVectors = FloatTensor();
    result->group().keyVectors = FloatTensor();
    QueryKeyView view;
    view.setResult(result);
    view.setViewState(ViewState());
    QVERIFY(!view.products().valid());
    QVERIFY(view.problem().contains(QStringLiteral("keepQueryKey")));
    draw(view);  // a message, no crash
  }

  void svgHasTheSumAndLabels() {
    QueryKeyView view;
    view.setResult(test::gpt2Like(1, 2, 6, 16));
    view.setViewState(ViewState());
    ExportOptions o;
    o.format = ImageFormat::Svg;
    const QString path = m_dir.filePath(QStringLiteral("qk.svg"));
    QCOMPARE(Exporter::exportView(view, path, o), QString());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray svg = f.readAll();
    QVERIFY(QSvgRenderer(svg).isValid());
    QVERIFY(svg.contains("score before softmax"));
    QVERIFY(svg.contains("q_d·k_d"));
    QVERIFY(svg.contains("w5"));
  }

  // Gemma 2 caps the scaled product: the kept score is cap·tanh(q·k·scale / cap), which the view
  // computes and prints instead of calling the difference a position bias.
  void softcappedScoresAreNotAPositionBias() {
    const auto result = test::gpt2Like(1, 2, 6, 16, 7, 3.0f);
    AttentionGroup& g = result->group();
    const double cap = 1.0;
    g.queryKeySoftcaps.assign(1, cap);
    for (float& v : g.scores.data)
      if (std::isfinite(v)) v = static_cast<float>(cap * std::tanh(v / cap));
    QueryKeyView view;
    view.setResult(result);
    view.setViewState(ViewState());
    QCOMPARE(view.products().softcap, cap);
    ExportOptions o;
    o.format = ImageFormat::Svg;
    const QString path = m_dir.filePath(QStringLiteral("qk-capped.svg"));
    QCOMPARE(Exporter::exportView(view, path, o), QString());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray svg = f.readAll();
    QVERIFY(svg.contains("tanh"));
    QVERIFY(!svg.contains("position bias"));
  }

 private:
  QTemporaryDir m_dir;
};

ATTNSCOPE_QTEST(QueryKeyViewTest)
#include "query_key_view_test.moc"
