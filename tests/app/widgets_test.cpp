// SPDX-License-Identifier: GPL-3.0-or-later
// The small widgets as a user meets them: the PNG export dialog's size is the file's, the loss
// plot's x-axis after an early stop and its colours in a dark palette, a floating banner that
// moves nothing, the heads box's wording.
#include <QComboBox>
#include <QImage>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QVBoxLayout>

#include "error_banner.h"
#include "export_dialog.h"
#include "exporter.h"
#include "fake_result.h"
#include "heatmap_view.h"
#include "loss_plot.h"
#include "model_panel.h"
#include "qtest_main.h"
#include "status_panel.h"

using namespace attnscope;
using namespace attnscope::gui;

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

  // The busy line of a long run says how long is left, from the pace of the layers so far.
  void progressSaysTheTimeLeft() {
    const QString quick = StatusPanel::progressText(3, 12, 300);  // 0.3 s in: nothing to announce
    QCOMPARE(quick, QStringLiteral("Computing… 3 of 12 layers done"));
    // 4 of 32 layers in 8 s: 2 s a layer, 28 left.
    QCOMPARE(StatusPanel::progressText(4, 32, 8000),
             QStringLiteral("Computing… 4 of 32 layers done, about 56 s left"));
    QCOMPARE(StatusPanel::progressText(2, 32, 10000),
             QStringLiteral("Computing… 2 of 32 layers done, about 2 min 30 s left"));
    // The last layer under a second away: no countdown.
    QCOMPARE(StatusPanel::progressText(31, 32, 15000),
             QStringLiteral("Computing… 31 of 32 layers done"));
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

  // Gemma 2's local and global layers and its capped scores are named in the model line.
  void modelLineNamesLocalLayersAndTheSoftcap() {
    ModelPanel panel;
    attnscope::ModelInfo info;
    info.name = "gemma2";
    info.layers = 4;
    info.heads = 8;
    info.dModel = 64;
    info.causal = true;
    info.layerWindows = {4096, 0, 4096, 0};
    info.attentionSoftcap = 50;
    panel.setModelInfo(info);
    QString all;
    for (const QLabel* label : panel.findChildren<QLabel*>()) all += label->text() + '\n';
    QVERIFY2(all.contains(QStringLiteral("sliding window 4096 on 2 of 4 layers")), qPrintable(all));
    QVERIFY(all.contains(QStringLiteral("soft-capped at 50")));
  }

  // ModernBERT's local layers: an encoder's window is two-sided, said as ± its half.
  void modelLineNamesAnEncodersTwoSidedWindow() {
    ModelPanel panel;
    attnscope::ModelInfo info;
    info.name = "modernbert";
    info.layers = 3;
    info.heads = 4;
    info.dModel = 32;
    info.layerWindows = {0, 128, 128};
    panel.setModelInfo(info);
    QString all;
    for (const QLabel* label : panel.findChildren<QLabel*>()) all += label->text() + '\n';
    QVERIFY2(all.contains(QStringLiteral("local window ±64 on 2 of 3 layers")), qPrintable(all));
    QVERIFY(!all.contains(QStringLiteral("sliding window")));
  }
};

ATTNSCOPE_QTEST(WidgetsTest)
#include "widgets_test.moc"
