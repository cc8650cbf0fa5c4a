// SPDX-License-Identifier: GPL-3.0-or-later
// The small widgets as a user meets them: the PNG export dialog's size is the file's, the loss
// plot after an early stop and in a dark palette, the typed corpus path, a banner that moves no
// control, the heads box's wording.
#include <QComboBox>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QVBoxLayout>

#include "document.h"
#include "error_banner.h"
#include "export_dialog.h"
#include "exporter.h"
#include "fake_result.h"
#include "heatmap_view.h"
#include "loss_plot.h"
#include "model_panel.h"
#include "training_panel.h"

using namespace attnscope;
using namespace attnscope::gui;

namespace {

QString writeFile(const QTemporaryDir& dir, const QString& name, const QByteArray& bytes) {
  const QString path = dir.filePath(name);
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return {};
  f.write(bytes);
  return path;
}

QByteArray corpus() {
  QByteArray text;
  for (int i = 0; i < 200; ++i) text += "To be, or not to be, that is the question.\n";
  return text;
}

}  // namespace

class WidgetsTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // 1200 px at 150 dpi is a 1200-pixel-wide file (it was 1875).
  void pngDialogSizeIsTheFilesPixelSize() {
    QTemporaryDir dir;
    render::ExportOptions defaults;
    defaults.title = QStringLiteral("t");
    ExportDialog dialog(render::ImageFormat::Png, defaults);
    dialog.widthBox()->setValue(1200);
    dialog.heightBox()->setValue(800);
    dialog.dpiBox()->setValue(150);
    auto* note = dialog.findChild<QLabel*>(QStringLiteral("exportSizeNote"));
    QVERIFY(note && note->text().contains(QStringLiteral("1200 × 800 pixels")));
    render::HeatmapView view;
    view.setResult(test::checkerboard(5));
    const QString path = dir.filePath(QStringLiteral("out.png"));
    QCOMPARE(render::Exporter::exportView(view, path, dialog.options()), QString());
    QCOMPARE(QImage(path).size(), QSize(1200, 800));
  }

  void lossPlotEndsAtTheStepsDone() {
    LossPlot plot;
    plot.setBaseline(3.0, 1000);
    QCOMPARE(plot.xAxisEnd(), 1000.0);
    for (int s = 1; s <= 120; ++s) plot.addTrainLoss(s, 3.0 - s * 0.01);
    QCOMPARE(plot.xAxisEnd(), 1000.0);  // still running: the planned steps
    plot.setStepsDone(120);
    QCOMPARE(plot.xAxisEnd(), 120.0);
  }

  void lossPlotFollowsADarkPalette() {
    LossPlot plot;
    plot.resize(400, 250);
    QPalette dark = plot.palette();
    dark.setColor(QPalette::Base, QColor(30, 30, 34));
    dark.setColor(QPalette::Window, QColor(40, 40, 44));
    dark.setColor(QPalette::Text, QColor(230, 230, 230));
    dark.setColor(QPalette::WindowText, QColor(230, 230, 230));
    plot.setPalette(dark);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    QTest::qWait(50);  // the queued replot
    const QImage image = plot.grab().toImage();
    QCOMPARE(image.pixelColor(3, 3), QColor(30, 30, 34));
    QCOMPARE(image.pixelColor(image.width() / 2, image.height() / 3), QColor(30, 30, 34));
  }

  // Stopping early rescales the plot to the steps really done.
  void stoppedTrainingRescalesThePlot() {
    QTemporaryDir dir;
    Document doc;
    doc.setText(QStringLiteral("To be"));
    TrainingPanel panel(&doc);
    QVERIFY(panel.setCorpusPath(writeFile(dir, QStringLiteral("c.txt"), corpus())));
    TrainOptions o;
    o.model.nLayer = 1;
    o.model.nHead = 2;
    o.model.nEmbd = 16;
    o.model.blockSize = 16;
    o.steps = 100000;
    o.batch = 4;
    o.evalEvery = 10;
    o.snapshotEvery = 10;
    o.evalWindows = 2;
    panel.setOptions(o, 1);
    QSignalSpy finished(&panel, &TrainingPanel::runFinished);
    QVERIFY(panel.start());
    QTRY_VERIFY_WITH_TIMEOUT(panel.lossPlot()->trainPointCount() >= 3, 60000);
    panel.stop();
    QVERIFY(finished.wait(60000));
    QCOMPARE(finished.last().at(0).toBool(), true);
    QVERIFY2(panel.lossPlot()->xAxisEnd() < 5000,
             qPrintable(QString::number(panel.lossPlot()->xAxisEnd())));
    QVERIFY(panel.lossPlot()->xAxisEnd() >= panel.lossPlot()->trainPointCount());
  }

  // The corpus path can be typed: a good path loads on Enter, a bad one is marked and reported,
  // and Start refuses a path that was typed but cannot be used.
  void corpusPathCanBeTyped() {
    QTemporaryDir dir;
    Document doc;
    TrainingPanel panel(&doc);
    panel.show();
    auto* field = panel.findChild<QLineEdit*>(QStringLiteral("corpusPath"));
    QVERIFY(field && !field->isReadOnly());
    const QString good = writeFile(dir, QStringLiteral("good.txt"), corpus());
    field->setFocus();
    QTest::keyClicks(field, good);
    QTest::keyClick(field, Qt::Key_Return);
    QVERIFY2(panel.errorMessage().isEmpty(), qPrintable(panel.errorMessage()));
    bool loaded = false;
    for (QLabel* label : panel.findChildren<QLabel*>())
      loaded =
          loaded || label->text().contains(QRegularExpression(QStringLiteral("8.?600 characters")));
    QVERIFY(loaded);
    field->clear();
    QTest::keyClicks(field, dir.filePath(QStringLiteral("missing.txt")));
    QTest::keyClick(field, Qt::Key_Return);
    QVERIFY(!panel.errorMessage().isEmpty());
    QCOMPARE(field->text(), dir.filePath(QStringLiteral("missing.txt")));
    QVERIFY(!panel.start());
    QVERIFY(!panel.isRunning());
  }

  // A message in the training panel takes the plot's room: the Start button does not move.
  void bannerMovesNoControl() {
    Document doc;
    TrainingPanel panel(&doc);
    panel.resize(420, 760);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QPushButton* start = nullptr;
    for (QPushButton* b : panel.findChildren<QPushButton*>())
      if (b->text() == QStringLiteral("Start")) start = b;
    QVERIFY(start);
    auto* field = panel.findChild<QLineEdit*>(QStringLiteral("corpusPath"));
    const QPoint before = start->mapTo(&panel, QPoint(0, 0));
    const QPoint fieldBefore = field->mapTo(&panel, QPoint(0, 0));
    QVERIFY(!panel.start());  // "Choose a corpus first"
    QVERIFY(!panel.errorMessage().isEmpty());
    QTest::qWait(20);
    QCOMPARE(start->mapTo(&panel, QPoint(0, 0)), before);
    QCOMPARE(field->mapTo(&panel, QPoint(0, 0)), fieldBefore);
  }

  // floatOver: the window's banner as an overlay along an edge of the views.
  void floatingBannerMovesNothing() {
    QWidget host;
    host.resize(600, 400);
    auto* layout = new QVBoxLayout(&host);
    auto* top = new QPushButton(QStringLiteral("top"), &host);
    auto* bottom = new QPushButton(QStringLiteral("bottom"), &host);
    layout->addWidget(top);
    layout->addStretch(1);
    layout->addWidget(bottom);
    auto* banner = new ErrorBanner(&host);
    banner->floatOver(&host, Qt::AlignBottom);
    host.show();
    QVERIFY(QTest::qWaitForWindowExposed(&host));
    const QRect topBefore = top->geometry(), bottomBefore = bottom->geometry();
    banner->showMessage(QStringLiteral("Something went wrong\nand here is why"));
    QTest::qWait(20);
    QCOMPARE(top->geometry(), topBefore);
    QCOMPARE(bottom->geometry(), bottomBefore);
    QVERIFY(banner->isVisible());
    QCOMPARE(banner->geometry().bottom(), host.rect().bottom());
    QCOMPARE(banner->width(), host.width());
    host.resize(800, 500);
    QTest::qWait(20);
    QCOMPARE(banner->width(), 800);
    QCOMPARE(banner->geometry().bottom(), 499);
    banner->clearMessage();
    QVERIFY(!banner->isVisible());
  }

  void headsBoxSaysWhatItsNumbersMean() {
    ModelPanel panel;
    QComboBox* heads = nullptr;
    for (QComboBox* box : panel.findChildren<QComboBox*>())
      if (box->toolTip().startsWith(QStringLiteral("Number of heads"))) heads = box;
    QVERIFY(heads);
    QStringList items;
    for (int i = 0; i < heads->count(); ++i) items << heads->itemText(i);
    QVERIFY2(items.contains(QStringLiteral("4 heads (16 dims each)")),
             qPrintable(items.join(QStringLiteral(" | "))));
    QVERIFY(items.contains(QStringLiteral("1 head (64 dims)")));
  }
};

QTEST_MAIN(WidgetsTest)
#include "widgets_test.moc"
