// SPDX-License-Identifier: GPL-3.0-or-later
// The ablation view on a hand-made map: each cell carries the diverging colour of its Δ log p
// (centred at 0, symmetric), the caption names the target and the baseline and says when the
// map is an estimate, a click selects the head, the buttons ask for a run and cancel it, every
// state without a map says why, and the view exports to PNG, SVG and PDF.
#include <QFile>
#include <QImage>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <memory>

#include "ablation_view.h"
#include "exporter.h"
#include "fake_result.h"
#include "palette.h"
#include "qtest_main.h"

using namespace attnscope;
using namespace attnscope::render;
using Phase = AblationStatus::Phase;

namespace {

constexpr int kLayers = 3, kHeads = 4;

// Δ log p of (l, h): one strongly harmful head, one helpful, the rest small.
float change(int l, int h) {
  if (l == 1 && h == 2) return -2.0f;
  if (l == 2 && h == 0) return 1.0f;
  return 0.05f * static_cast<float>(l - h);
}

std::shared_ptr<HeadAblation> fakeAblation(bool estimate) {
  auto a = std::make_shared<HeadAblation>();
  for (int i = 0; i < 5; ++i) {
    Token t;
    t.id = i;
    t.text = t.label = "w" + std::to_string(i);
    a->tokens.push_back(t);
  }
  a->target.id = 42;
  a->target.text = a->target.label = "zebra";
  a->position = 4;
  a->estimate = estimate;
  a->layers = kLayers;
  a->heads = kHeads;
  a->baseline = 0.4;
  a->probabilities = FloatTensor({kLayers, kHeads});
  a->logProbChange = FloatTensor({kLayers, kHeads});
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kHeads; ++h) {
      const auto i = static_cast<std::size_t>(l * kHeads + h);
      a->logProbChange.data[i] = change(l, h);
      a->probabilities.data[i] = static_cast<float>(0.4 * std::exp(change(l, h)));
    }
  a->milliseconds = 12;
  return a;
}

AblationStatus done(bool estimate) {
  AblationStatus s;
  s.phase = Phase::Done;
  s.estimate = estimate;
  s.done = s.total = kLayers * kHeads;
  s.ablation = fakeAblation(estimate);
  return s;
}

QImage draw(AblationView& view, QSize size = QSize(900, 600)) {
  QImage image(size, QImage::Format_RGB32);
  QPainter p(&image);
  view.renderTo(p, image.rect(), QStringLiteral("ablation"));
  return image;
}

int distinctMapColours(const QImage& image) {
  QSet<QRgb> seen;
  for (int y = 0; y < image.height(); y += 3)
    for (int x = 0; x < image.width(); x += 3) seen.insert(image.pixel(x, y));
  return seen.size();
}

QString svgOf(AblationView& view, const QString& path) {
  ExportOptions o;
  o.format = ImageFormat::Svg;
  o.width = 900;
  o.height = 600;
  o.title = QStringLiteral("ablation");
  if (!Exporter::exportView(view, path, o).isEmpty()) return QString();
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return QString();
  return QString::fromUtf8(f.readAll());
}

}  // namespace

class AblationViewTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { QVERIFY(m_dir.isValid()); }

  void cellsCarryTheDivergingColourOfTheirChange() {
    AblationView view;
    view.setResult(
        test::makeResult(kLayers, kHeads, 5, 1, [](int, int, int, int, int) { return 0.2f; }));
    view.setAblation(done(false));
    QVERIFY(view.message().isEmpty());
    const QImage image = draw(view);
    const Palette diverging = Palette::diverging();
    for (int l = 0; l < kLayers; ++l) {
      for (int h = 0; h < kHeads; ++h) {
        const QRectF cell = view.cellRect(l, h);
        QVERIFY(!cell.isEmpty());
        QVERIFY2(cell.width() >= 30, "cells big enough to read");
        // Off-centre, clear of the printed value and the grid lines.
        const QPoint at =
            (cell.topLeft() + QPointF(cell.width() * 0.15, cell.height() * 0.2)).toPoint();
        const QColor want = diverging.colorAt(0.5 + 0.5 * change(l, h) / 2.0);  // max |Δ| = 2
        const QColor got = image.pixelColor(at);
        QVERIFY2(
            std::abs(got.red() - want.red()) <= 2 && std::abs(got.green() - want.green()) <= 2 &&
                std::abs(got.blue() - want.blue()) <= 2,
            qPrintable(
                QStringLiteral("L%1 H%2: %3 vs %4").arg(l).arg(h).arg(got.name(), want.name())));
      }
    }
    // Δ log p = 0 (L0 H0) is the palette's neutral middle: the scale is centred at 0.
    const QColor zero = image.pixelColor(
        (view.cellRect(0, 0).topLeft() + QPointF(view.cellRect(0, 0).width() * 0.15, 4)).toPoint());
    QVERIFY2(std::abs(zero.red() - zero.blue()) < 12 && zero.lightness() > 230,
             qPrintable(zero.name()));
  }

  void theCaptionNamesTargetBaselineAndEstimate() {
    AblationView view;
    view.setAblation(done(false));
    const QString exact = svgOf(view, m_dir.filePath(QStringLiteral("exact.svg")));
    QVERIFY(exact.contains(QStringLiteral("zebra")));
    QVERIFY(exact.contains(QStringLiteral("baseline p = 0.4000")));
    QVERIFY(exact.contains(QStringLiteral("exact")));
    QVERIFY(!exact.contains(QStringLiteral("attribution patching")));
    // The values are printed in the cells, and the strongest head is listed first.
    QVERIFY(exact.contains(QStringLiteral("−2.00")));
    QVERIFY(exact.contains(QStringLiteral("strongest: L1 H2 −2.000")));
    view.setAblation(done(true));
    const QString estimate = svgOf(view, m_dir.filePath(QStringLiteral("estimate.svg")));
    QVERIFY(estimate.contains(QStringLiteral("estimate (attribution patching, first order)")));
  }

  // Issue #32 (12): an estimate's first-order probabilities can leave [0, 1] (as the core gave
  // them before it clamped); the view never prints one and says why.
  void anEstimateNeverShowsAnImpossibleProbability() {
    AblationView view;
    AblationStatus status = done(true);
    auto a = std::make_shared<HeadAblation>(*status.ablation);
    for (std::size_t i = 0; i < a->probabilities.data.size(); ++i)
      a->probabilities.data[i] = static_cast<float>(a->baseline * (1 + a->logProbChange.data[i]));
    a->probabilities.data[2 * kHeads + 0] = 1.01f;  // L2 H0, as the issue saw it
    status.ablation = a;
    view.setAblation(status);
    const QString svg = svgOf(view, m_dir.filePath(QStringLiteral("impossible.svg")));
    QVERIFY(svg.contains(QStringLiteral("strongest: L1 H2 −2.000")));
    static const QRegularExpression probability(QStringLiteral("\\bp[ =]+(\\d+\\.\\d+)"));
    for (auto m = probability.globalMatch(svg); m.hasNext();) {
      const double p = m.next().captured(1).toDouble();
      QVERIFY2(p >= 0 && p <= 1, qPrintable(QString::number(p)));
    }
    QVERIFY(svg.contains(QStringLiteral("first-order")));
  }

  void aClickSelectsTheHead() {
    AblationView view;
    view.resize(900, 600);
    view.setResult(
        test::makeResult(kLayers, kHeads, 5, 1, [](int, int, int, int, int) { return 0.2f; }));
    view.setAblation(done(false));
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.repaint();
    QSignalSpy activated(&view, &AttentionView::headActivated);
    const QRectF cell = view.cellRect(2, 3);
    QVERIFY(!cell.isEmpty());
    QTest::mouseClick(&view, Qt::LeftButton, {}, cell.center().toPoint());
    QCOMPARE(activated.count(), 1);
    QCOMPARE(activated.at(0).at(0).toInt(), 2);
    QCOMPARE(activated.at(0).at(1).toInt(), 3);
    // Outside the map: nothing.
    QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(2, view.height() - 2));
    QCOMPARE(activated.count(), 1);
  }

  void theBarAsksForRunsAndCancels() {
    AblationView view;
    auto* exact = view.findChild<QPushButton*>(QStringLiteral("ablateExact"));
    auto* estimate = view.findChild<QPushButton*>(QStringLiteral("ablateEstimate"));
    auto* cancel = view.findChild<QPushButton*>(QStringLiteral("ablationCancel"));
    auto* progress = view.findChild<QProgressBar*>(QStringLiteral("ablationProgress"));
    QVERIFY(exact && estimate && cancel && progress);
    QVERIFY(!exact->isEnabled());  // no result to ablate yet
    view.setResult(
        test::makeResult(kLayers, kHeads, 5, 1, [](int, int, int, int, int) { return 0.2f; }));
    QVERIFY(exact->isEnabled() && estimate->isEnabled() && !cancel->isEnabled());
    QSignalSpy requested(&view, &AblationView::ablationRequested);
    QSignalSpy cancelled(&view, &AblationView::ablationCancelRequested);
    exact->click();
    estimate->click();
    QCOMPARE(requested.count(), 2);
    QCOMPARE(requested.at(0).at(0).toBool(), false);
    QCOMPARE(requested.at(1).at(0).toBool(), true);
    AblationStatus running;
    running.phase = Phase::Running;
    running.done = 5;
    running.total = 12;
    view.setAblation(running);
    QVERIFY(!exact->isEnabled() && cancel->isEnabled());
    QCOMPARE(progress->value(), 5);
    QCOMPARE(progress->maximum(), 12);
    QCOMPARE(progress->text(), QStringLiteral("5/12 heads"));
    cancel->click();
    QCOMPARE(cancelled.count(), 1);
  }

  void everyStateWithoutAMapSaysWhy() {
    AblationView view;
    QVERIFY(view.message().contains(QStringLiteral("No result yet")));
    view.setResult(
        test::makeResult(kLayers, kHeads, 5, 1, [](int, int, int, int, int) { return 0.2f; }));
    QVERIFY(view.message().contains(QStringLiteral("Run the ablation for this text")));
    AblationStatus s;
    s.phase = Phase::Running;
    s.done = 3;
    s.total = 12;
    view.setAblation(s);
    QVERIFY(view.message().contains(QStringLiteral("3 of 12")));
    s.phase = Phase::Failed;
    s.message = QStringLiteral("toy cannot ablate heads");
    view.setAblation(s);
    QVERIFY(view.message().contains(s.message));
    s.phase = Phase::Cancelled;
    view.setAblation(s);
    QVERIFY(view.message().contains(QStringLiteral("cancelled")));
    // The message is what the drawing says, not a blank.
    const QString svg = svgOf(view, m_dir.filePath(QStringLiteral("cancelled.svg")));
    QVERIFY(svg.contains(QStringLiteral("cancelled")));
    QVERIFY(view.cellRect(0, 0).isEmpty());
  }

  void exportsToEveryFormat() {
    AblationView view;
    view.setAblation(done(false));
    const char* const names[] = {"a.png", "a.svg", "a.pdf"};
    for (ImageFormat f : {ImageFormat::Png, ImageFormat::Svg, ImageFormat::Pdf}) {
      ExportOptions o;
      o.format = f;
      o.width = 800;
      o.height = 600;
      o.title = QStringLiteral("ablation");
      const QString path = m_dir.filePath(QString::fromLatin1(names[static_cast<int>(f)]));
      QCOMPARE(Exporter::exportView(view, path, o), QString());
      QVERIFY(QFileInfo(path).size() > 1000);
    }
    const QImage image(m_dir.filePath(QStringLiteral("a.png")));
    QVERIFY(!image.isNull());
    QVERIFY2(distinctMapColours(image) > 8, "image is (nearly) blank");
  }

 private:
  QTemporaryDir m_dir;
};

ATTNSCOPE_QTEST(AblationViewTest)
#include "ablation_view_test.moc"
