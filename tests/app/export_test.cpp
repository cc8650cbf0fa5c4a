// SPDX-License-Identifier: GPL-3.0-or-later
// What the exporter writes, read back independently: SVG and PDF parsed for vector cells, text
// and image encodings; PNG pixel sizes; per-head titles; token labels beside .npy and in .csv.
#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPainter>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QtTest>

#include <zlib.h>

#include <memory>

#include "exporter.h"
#include "fake_result.h"
#include "grid_view.h"
#include "heatmap_view.h"
#include "matrix_painter.h"
#include "palette.h"
#include "qtest_main.h"
#include "view_factory.h"

using namespace attnscope;
using namespace attnscope::render;

namespace {

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

int count(const QByteArray& text, const QByteArray& what) {
  int n = 0;
  for (qsizetype i = text.indexOf(what); i >= 0; i = text.indexOf(what, i + what.size())) ++n;
  return n;
}

// Qt writes a rectangle as <rect>, or as a closed four-point <path> when replaying a QPicture.
int shapes(const QByteArray& svg) { return count(svg, "<rect") + count(svg, "<path"); }

// Every Flate stream of a PDF, inflated with zlib (not with Qt, which wrote them).
QByteArray inflatedStreams(const QByteArray& pdf) {
  QByteArray out;
  for (qsizetype i = pdf.indexOf("stream"); i >= 0; i = pdf.indexOf("stream", i + 6)) {
    if (i >= 3 && pdf.mid(i - 3, 3) == "end") continue;
    qsizetype start = i + 6;
    if (pdf.mid(start, 2) == "\r\n")
      start += 2;
    else if (pdf.at(start) == '\n')
      ++start;
    const qsizetype end = pdf.indexOf("endstream", start);
    if (end < 0) break;
    z_stream z{};
    if (inflateInit(&z) != Z_OK) continue;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(pdf.constData() + start));
    z.avail_in = static_cast<uInt>(end - start);
    char buffer[1 << 16];
    int rc = Z_OK;
    while (rc == Z_OK) {
      z.next_out = reinterpret_cast<Bytef*>(buffer);
      z.avail_out = sizeof buffer;
      rc = inflate(&z, Z_NO_FLUSH);
      out.append(buffer, static_cast<qsizetype>(sizeof buffer - z.avail_out));
    }
    inflateEnd(&z);
    out.append('\n');
  }
  return out;
}

// Fill operators (f, f*, F) in PDF content: one per filled path, so one per cell rectangle.
int fillOperators(const QByteArray& content) {
  int n = 0;
  for (const QByteArray& line : content.split('\n')) {
    const QList<QByteArray> words = line.simplified().split(' ');
    const QByteArray& op = words.last();
    if (op == "f" || op == "f*" || op == "F") ++n;
  }
  return n;
}

QString tool(const char* name) { return QStandardPaths::findExecutable(QString::fromLatin1(name)); }

QString run(const QString& program, const QStringList& args) {
  QProcess p;
  p.start(program, args);
  if (!p.waitForFinished(30000) || p.exitCode() != 0) return {};
  return QString::fromUtf8(p.readAllStandardOutput());
}

}  // namespace

class ExportTest : public QObject {
  Q_OBJECT

  // The SVG of a heatmap of a tokens × tokens checkerboard.
  QByteArray heatmapSvg(HeatmapView& view, int tokens, const QString& name,
                        QSize size = QSize(1200, 900)) {
    view.setResult(test::checkerboard(tokens));
    ExportOptions o;
    o.format = ImageFormat::Svg;
    o.width = size.width();
    o.height = size.height();
    const QString path = m_dir.filePath(name);
    const QString error = Exporter::exportView(view, path, o);
    if (!error.isEmpty()) qWarning("%s", qPrintable(error));
    return readAll(path);
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    // ATTNSCOPE_KEEP_TEST_FILES=1 keeps the exports to look at.
    if (qEnvironmentVariableIsSet("ATTNSCOPE_KEEP_TEST_FILES")) {
      m_dir.setAutoRemove(false);
      qInfo("exports in %s", qPrintable(m_dir.path()));
    }
  }

  // A 12 × 12 checkerboard has no two equal neighbours: 144 cell rectangles at the least, the
  // token labels as text, and the cells where the view says they are, in the palette's colours.
  void svgHeatmapCellsAreRectangles() {
    HeatmapView view;
    const QSize size(900, 800);
    const QByteArray svg = heatmapSvg(view, 12, QStringLiteral("cells.svg"), size);
    const int rects = shapes(svg);
    qInfo("12x12 heatmap SVG: %d <rect>/<path>, %d <image>, %lld bytes", rects,
          count(svg, "<image"), static_cast<long long>(svg.size()));
    QVERIFY2(rects >= 144, qPrintable(QString::number(rects)));
    // Only the colour scale (QCustomPlot's own) may remain a bitmap.
    QVERIFY(count(svg, "<image") <= 1);
    QVERIFY(svg.contains(">t0_7<"));
    // Rasterise with Qt's SVG renderer and look at two neighbouring cells.
    QImage image(size, QImage::Format_RGB32);
    image.fill(Qt::white);
    {
      QPainter p(&image);
      QSvgRenderer renderer(svg);
      QVERIFY(renderer.isValid());
      renderer.render(&p, QRectF(QPointF(0, 0), size));
    }
    const Palette viridis = Palette::named(QStringLiteral("viridis"));
    // Near a corner of each cell, away from the value written in its middle.
    const QPointF cell = view.lastCellCenter(1, 1) - view.lastCellCenter(0, 0);
    const auto seen = [&](int q, int k) {
      return image.pixelColor((view.lastCellCenter(q, k) - cell * 0.35).toPoint());
    };
    const auto near = [](QColor a, QColor b) {
      return std::abs(a.red() - b.red()) < 12 && std::abs(a.green() - b.green()) < 12 &&
             std::abs(a.blue() - b.blue()) < 12;
    };
    // Weights map [0, max = 0.9] onto the palette.
    for (const auto& [q, k] :
         {std::pair{0, 0}, std::pair{0, 1}, std::pair{7, 4}, std::pair{11, 11}}) {
      const QColor want = viridis.colorAt(((q + k) % 2 ? 0.9 : 0.1) / 0.9);
      QVERIFY2(near(seen(q, k), want), qPrintable(QStringLiteral("cell %1,%2: %3, want %4")
                                                      .arg(q)
                                                      .arg(k)
                                                      .arg(seen(q, k).name(), want.name())));
    }
  }

  // Above the cut-off (300 × 300 > 256 × 256 cells) the cells are one image, PNG-encoded.
  void svgAboveTheCutOffIsOneImage() {
    HeatmapView view;
    const QByteArray svg = heatmapSvg(view, 300, QStringLiteral("big.svg"));
    const int rects = shapes(svg);
    qInfo("300x300 heatmap SVG: %d <rect>/<path>, %d <image>, %lld bytes", rects,
          count(svg, "<image"), static_cast<long long>(svg.size()));
    QVERIFY(rects < 1000);
    QVERIFY(count(svg, "<image") >= 1);
    QVERIFY(svg.contains("data:image/png"));
    QVERIFY(!svg.contains("data:image/jpeg"));
  }

  // At the cut-off, the worst case (no two neighbours alike): every cell a shape in SVG and a fill
  // in PDF. The sizes are printed for the README's numbers.
  void vectorSizesAtTheCutOff_data() {
    QTest::addColumn<int>("tokens");
    QTest::newRow("64") << 64;
    QTest::newRow("256") << 256;
  }
  void vectorSizesAtTheCutOff() {
    QFETCH(int, tokens);
    HeatmapView view;
    QElapsedTimer timer;
    timer.start();
    const QByteArray svg = heatmapSvg(view, tokens, QStringLiteral("cut%1.svg").arg(tokens));
    const qint64 svgMs = timer.restart();
    ExportOptions o;
    o.format = ImageFormat::Pdf;
    const QString pdfPath = m_dir.filePath(QStringLiteral("cut%1.pdf").arg(tokens));
    QCOMPARE(Exporter::exportView(view, pdfPath, o), QString());
    const QByteArray pdf = readAll(pdfPath);
    const int fills = fillOperators(inflatedStreams(pdf));
    qInfo("%dx%d heatmap: SVG %d shapes, %lld bytes, %lld ms; PDF %d fills, %lld bytes, %lld ms",
          tokens, tokens, shapes(svg), static_cast<long long>(svg.size()),
          static_cast<long long>(svgMs), fills, static_cast<long long>(pdf.size()),
          static_cast<long long>(timer.elapsed()));
    QVERIFY(shapes(svg) >= tokens * tokens);
    QVERIFY(fills >= tokens * tokens);
    QVERIFY(!pdf.contains("/DCTDecode"));
  }

  // PDF: no JPEG anywhere (no /DCTDecode), the cells as rectangle operators, the labels as text.
  void pdfIsVectorWithoutJpeg() {
    for (int tokens : {12, 300}) {
      HeatmapView view;
      view.setResult(test::checkerboard(tokens));
      ExportOptions o;
      o.format = ImageFormat::Pdf;
      const QString path = m_dir.filePath(QStringLiteral("cells%1.pdf").arg(tokens));
      QCOMPARE(Exporter::exportView(view, path, o), QString());
      const QByteArray pdf = readAll(path);
      QVERIFY(pdf.startsWith("%PDF"));
      QVERIFY2(!pdf.contains("/DCTDecode"), "a JPEG image in the PDF");
      const QByteArray content = inflatedStreams(pdf);
      const int fills = fillOperators(content);
      qInfo("%dx%d heatmap PDF: %d filled paths, %d image XObjects, %lld bytes", tokens, tokens,
            fills, count(pdf, "/Subtype /Image"), static_cast<long long>(pdf.size()));
      if (tokens == 12) {
        QVERIFY2(fills >= 144, qPrintable(QString::number(fills)));
      } else {
        QVERIFY(fills < 1000);
        QVERIFY(count(pdf, "/Subtype /Image") >= 1);
        QVERIFY(pdf.contains("/FlateDecode"));
      }
      if (const QString images = tool("pdfimages"); !images.isEmpty()) {
        const QString list = run(images, {QStringLiteral("-list"), path});
        QVERIFY(!list.contains(QStringLiteral("jpeg")));
      }
      if (const QString text = tool("pdftotext"); !text.isEmpty()) {
        const QString out = run(text, {path, QStringLiteral("-")});
        QVERIFY2(out.contains(QStringLiteral("t0_1")), qPrintable(out.left(200)));
        QVERIFY(out.contains(QStringLiteral("query")));
      }
    }
  }

  // The grid and compare panels share the cell drawing: vector in SVG too.
  void gridAndCompareCellsAreRectangles() {
    for (ViewKind k : {ViewKind::Grid, ViewKind::Compare}) {
      std::unique_ptr<AttentionView> view(createView(k));
      view->setResult(test::checkerboard(8, 2, 2, 2));
      ViewState s;
      s.vsHead = 0;
      s.vsItem = 1;
      view->setViewState(s);
      ExportOptions o;
      o.format = ImageFormat::Svg;
      const QString path = m_dir.filePath(toString(k) + QStringLiteral("_cells.svg"));
      QCOMPARE(Exporter::exportView(*view, path, o), QString());
      const QByteArray svg = readAll(path);
      // Grid: 2 layers × (2 heads + mean) tiles of 64 cells; compare: A and B of 64 cells (the
      // difference of two equal checkerboards is one colour).
      const int cells = k == ViewKind::Grid ? 2 * 3 * 64 : 2 * 64;
      QVERIFY2(count(svg, "<rect") >= cells, qPrintable(QString::number(count(svg, "<rect"))));
      QCOMPARE(count(svg, "<image"), 0);
    }
  }

  // Issue #32 (10): one layer of four heads on a 1200 × 900 page: the square tiles fill the width
  // and the block sits in the middle of the height, not in its top third.
  void aOneLayerGridIsCentredOnThePage() {
    std::unique_ptr<AttentionView> view(createView(ViewKind::Grid));
    view->setResult(test::checkerboard(8, 1, 4));
    view->setViewState(ViewState());
    const ExportOptions o = ExportOptions::png(QSize(1200, 900), 96);
    const QString path = m_dir.filePath(QStringLiteral("grid_one_layer.png"));
    QCOMPARE(Exporter::exportView(*view, path, o), QString());
    const QImage image(path);
    int first = -1, last = -1;  // the rows of the tiles: many coloured pixels
    for (int y = 0; y < image.height(); ++y) {
      int coloured = 0;
      for (int x = 0; x < image.width(); ++x) {
        const QColor c = image.pixelColor(x, y);
        coloured += c.saturation() > 60;
      }
      if (coloured > 400) {
        if (first < 0) first = y;
        last = y;
      }
    }
    QVERIFY(first >= 0);
    const int above = first, below = image.height() - 1 - last;
    QVERIFY2(std::abs(above - below) < image.height() / 8,
             qPrintable(QStringLiteral("%1 px above the tiles, %2 below").arg(above).arg(below)));
  }

  // Issue #32 (11): exports are dark on white unless asked for the window's colours; asked, a
  // dark theme's export is dark too (every format draws through the same renderTo).
  void exportsFollowTheThemeWhenAsked() {
    HeatmapView view;
    QPalette dark = view.palette();
    dark.setColor(QPalette::Base, QColor(30, 30, 30));
    dark.setColor(QPalette::Text, QColor(230, 230, 230));
    view.setPalette(dark);
    view.setResult(test::checkerboard(4));
    view.setViewState(ViewState());
    ExportOptions o = ExportOptions::png(QSize(400, 300), 96);
    o.title = QStringLiteral("themed");
    QCOMPARE(Exporter::renderImage(view, o).pixelColor(2, 2), QColor(Qt::white));
    o.themed = true;
    QCOMPARE(Exporter::renderImage(view, o).pixelColor(2, 2), QColor(30, 30, 30));
  }

  // The size typed for a PNG is the file's pixel size, at any dpi.
  void pngHasThePixelSizeAsked_data() {
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("height");
    QTest::addColumn<int>("dpi");
    QTest::newRow("1200x900 at 150") << 1200 << 900 << 150;
    QTest::newRow("1001x777 at 300") << 1001 << 777 << 300;
    QTest::newRow("640x480 at 96") << 640 << 480 << 96;
  }
  void pngHasThePixelSizeAsked() {
    QFETCH(int, width);
    QFETCH(int, height);
    QFETCH(int, dpi);
    HeatmapView view;
    view.setResult(test::checkerboard(6));
    ExportOptions o = ExportOptions::png(QSize(width, height), dpi);
    o.title = QStringLiteral("size");
    const QString path = m_dir.filePath(QStringLiteral("size.png"));
    QCOMPARE(Exporter::exportView(view, path, o), QString());
    const QImage image(path);
    QCOMPARE(image.size(), QSize(width, height));
    QCOMPARE(qRound(image.dotsPerMeterX() * 0.0254), dpi);
    // Drawn to the edges: the bottom-right corner region is not left transparent or black.
    QCOMPARE(image.pixelColor(width - 1, height - 1), QColor(Qt::white));
  }

  // Each file of "all heads" is titled with its own head only.
  void allHeadsTitlesNameTheirOwnHead() {
    ViewState s;
    s.layer = 1;
    s.head = 0;
    QCOMPARE(Exporter::headTitle(QStringLiteral("Heatmap — layer 1, head 0 — gpt2"), s, 0, 2),
             QStringLiteral("Heatmap — layer 0, head 2 — gpt2"));
    // "layer 1, head 0" must not match inside "layer 11, head 0".
    QCOMPARE(Exporter::headTitle(QStringLiteral("Heatmap — layer 11, head 0"), s, 3, 1),
             QStringLiteral("Heatmap — layer 11, head 0 — layer 3, head 1"));
    QCOMPARE(Exporter::headTitle(QStringLiteral("My slides"), s, 2, 3),
             QStringLiteral("My slides — layer 2, head 3"));
    QCOMPARE(Exporter::headTitle(QString(), s, 2, 3), QStringLiteral("Layer 2, head 3"));

    // And in the files themselves: the SVG of L0 H1 names layer 0, head 1 and no other head.
    ExportOptions o;
    o.format = ImageFormat::Svg;
    o.title = QStringLiteral("Heatmap — layer 1, head 0 — fake");
    const QString dir = m_dir.filePath(QStringLiteral("heads"));
    QCOMPARE(Exporter::exportAllHeads(test::checkerboard(4, 2, 2), s, dir, o), QString());
    QCOMPARE(QDir(dir).entryList(QDir::Files).size(), 4);
    const QByteArray svg = readAll(dir + QStringLiteral("/heatmap_L0_H1.svg"));
    QVERIFY(svg.contains("<title>Heatmap — layer 0, head 1 — fake</title>"));
    QVERIFY(!svg.contains("layer 1, head 0"));
  }

  void npyHasATokenLabelsFile() {
    auto r = test::checkerboard(3, 1, 1, 2);
    const QString npy = m_dir.filePath(QStringLiteral("att.npy"));
    QCOMPARE(Exporter::exportAttentionNpy(*r, npy), QString());
    QCOMPARE(Exporter::tokenLabelsPath(npy), m_dir.filePath(QStringLiteral("att.tokens.json")));
    const QJsonObject root =
        QJsonDocument::fromJson(readAll(Exporter::tokenLabelsPath(npy))).object();
    QCOMPARE(root.value(QStringLiteral("array")).toString(), QStringLiteral("att.npy"));
    QCOMPARE(root.value(QStringLiteral("shape")).toArray(), (QJsonArray{1, 2, 1, 3, 3}));
    const QJsonArray items = root.value(QStringLiteral("items")).toArray();
    QCOMPARE(items.size(), 2);
    const QJsonArray keys = items[1].toObject().value(QStringLiteral("keys")).toArray();
    QCOMPARE(keys.size(), 3);
    QCOMPARE(keys[2].toObject().value(QStringLiteral("label")).toString(), QStringLiteral("t1_2"));
    QCOMPARE(keys[2].toObject().value(QStringLiteral("id")).toInt(), 102);
  }

  void csvQuotesTokenLabels() {
    auto r = test::checkerboard(2);
    r->group().tokens[0][0].label = "a,\"b\"";
    const QString csv = m_dir.filePath(QStringLiteral("q.csv"));
    QCOMPARE(Exporter::exportAttentionCsv(*r, csv), QString());
    const QList<QByteArray> lines = readAll(csv).trimmed().split('\n');
    QCOMPARE(lines.size(), 5);
    QCOMPARE(lines[2], QByteArray("0,0,0,0,1,0.899999976,\"a,\"\"b\"\"\",\"t0_1\""));
  }

 private:
  QTemporaryDir m_dir;
};

ATTNSCOPE_QTEST(ExportTest)
#include "export_test.moc"
