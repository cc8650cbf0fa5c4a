// SPDX-License-Identifier: GPL-3.0-or-later
#include "exporter.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QSvgGenerator>

#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>

#include "attnscope/file_io.h"
#include "attnscope/long_range.h"
#include "attnscope/npy.h"
#include "attnscope/result_json.h"
#include "head_matrix.h"
#include "view_factory.h"

namespace attnscope::render {
namespace {

constexpr int kMaxSide = 20000;

QString cannotWrite(const QString& path, const QString& reason) {
  return QStringLiteral("cannot write %1: %2").arg(QDir::toNativeSeparators(path), reason);
}

QString checkOptions(const ExportOptions& o) {
  if (o.format == ImageFormat::Png && o.pixelSize.isValid()) {
    ExportOptions logical = o;
    logical.pixelSize = QSize();
    logical.width = qRound(o.pixelSize.width() * 96.0 / std::max(1, o.dpi));
    logical.height = qRound(o.pixelSize.height() * 96.0 / std::max(1, o.dpi));
    return checkOptions(logical);
  }
  if (o.width < 16 || o.height < 16 || o.width > kMaxSide || o.height > kMaxSide) {
    return QStringLiteral("size %1×%2 is out of range: width and height must be between 16 and %3")
        .arg(o.width)
        .arg(o.height)
        .arg(kMaxSide);
  }
  if (o.dpi < 24 || o.dpi > 2400)
    return QStringLiteral("dpi %1 must be between 24 and 2400").arg(o.dpi);
  if (o.format == ImageFormat::Png &&
      static_cast<double>(o.width) * o.height * (o.dpi / 96.0) * (o.dpi / 96.0) > 400e6) {
    return QStringLiteral(
               "a %1×%2 PNG at %3 dpi would exceed 400 megapixels: lower the size or dpi")
        .arg(o.width)
        .arg(o.height)
        .arg(o.dpi);
  }
  return {};
}

// Writes through core's OutputFile (the one writer of every file the app writes): atomic for
// regular files and symlink targets, direct for devices and pipes, a folder refused. QSaveFile
// would rename over /dev/null or a symlink. Qt's painters need a QIODevice, hence this adapter.
class OutputDevice final : public QIODevice {
 public:
  explicit OutputDevice(const QString& path) : m_file(path.toStdString()) {
    open(QIODevice::WriteOnly);
  }
  bool failed() const { return !m_error.isEmpty(); }
  QString error() const { return m_error; }
  void commit() { m_file.commit(); }

 protected:
  qint64 readData(char*, qint64) override { return -1; }
  qint64 writeData(const char* data, qint64 size) override {
    try {
      m_file.write(data, static_cast<std::size_t>(size));
      return size;
    } catch (const std::exception& e) {
      m_error = QString::fromUtf8(e.what());
      setErrorString(m_error);
      return -1;
    }
  }

 private:
  OutputFile m_file;
  QString m_error;
};

// Lets `write` fill the output and commits only when everything succeeded, so a failure leaves
// the previous file (or none) in place.
template <typename Write>
QString saveAtomically(const QString& path, Write write) {
  QString error;
  try {
    OutputDevice file(path);
    error = write(file);
    if (error.isEmpty() && file.failed()) error = file.error();
    if (error.isEmpty()) file.commit();
  } catch (const std::exception& e) {
    // OutputFile's messages already say "cannot write <path>: …".
    return QString::fromUtf8(e.what());
  }
  if (!error.isEmpty()) return cannotWrite(path, error);
  return {};
}

QString writeBytes(const QString& path, const QByteArray& bytes) {
  return saveAtomically(path, [&](QIODevice& file) -> QString {
    return file.write(bytes) == bytes.size() ? QString() : file.errorString();
  });
}

QString extensionOf(ImageFormat f) {
  switch (f) {
    case ImageFormat::Svg:
      return QStringLiteral("svg");
    case ImageFormat::Pdf:
      return QStringLiteral("pdf");
    case ImageFormat::Png:
      break;
  }
  return QStringLiteral("png");
}

// CSV field: always quoted, quotes doubled, so tokens like "," or a newline stay one field.
QByteArray csvField(const QString& s) {
  QByteArray out = s.toUtf8();
  out.replace('"', "\"\"");
  return '"' + out + '"';
}

QJsonArray tokenArray(const std::vector<Token>& tokens, const QStringList& labels) {
  QJsonArray out;
  for (int i = 0; i < labels.size(); ++i) {
    QJsonObject t{{QStringLiteral("position"), i}, {QStringLiteral("label"), labels[i]}};
    if (i < static_cast<int>(tokens.size()))
      t[QStringLiteral("id")] = static_cast<qint64>(tokens[static_cast<std::size_t>(i)].id);
    out.append(t);
  }
  return out;
}

}  // namespace

ExportOptions ExportOptions::png(const QSize& pixels, int dpi) {
  ExportOptions o;
  o.format = ImageFormat::Png;
  o.dpi = dpi;
  o.pixelSize = pixels;
  o.width = qRound(pixels.width() * 96.0 / dpi);
  o.height = qRound(pixels.height() * 96.0 / dpi);
  return o;
}

QSize ExportOptions::pngPixelSize() const {
  if (pixelSize.isValid()) return pixelSize;
  return {qRound(width * dpi / 96.0), qRound(height * dpi / 96.0)};
}

bool parseImageFormat(const QString& s, ImageFormat* out) {
  const QString f = s.toLower();
  ImageFormat format;
  if (f == QLatin1String("png"))
    format = ImageFormat::Png;
  else if (f == QLatin1String("svg"))
    format = ImageFormat::Svg;
  else if (f == QLatin1String("pdf"))
    format = ImageFormat::Pdf;
  else
    return false;
  if (out) *out = format;
  return true;
}

namespace {

/// `options` with the drawing enlarged where the view needs more room to stay readable; a PNG
/// of an exact pixel size keeps it (it was asked for), and the view fits itself into it.
ExportOptions legible(const AttentionView& view, ExportOptions options) {
  if (options.pixelSize.isValid()) return options;
  const QSize size =
      view.legibleExportSize(QSize(options.width, options.height), options.title, options.themed);
  options.width = size.width();
  options.height = size.height();
  return options;
}

}  // namespace

QImage Exporter::renderImage(AttentionView& view, const ExportOptions& requested) {
  const ExportOptions options = legible(view, requested);
  // Logical size × dpi/96 pixels: text and lines keep their proportions at any dpi.
  const double ratio = options.dpi / 96.0;
  const QSize pixels = options.pngPixelSize();
  QImage image(pixels, QImage::Format_ARGB32_Premultiplied);
  if (image.isNull()) return image;
  image.setDevicePixelRatio(ratio);
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    // The logical rect that covers the pixels (a fraction of a pixel more when they do not divide).
    const QRect logical(0, 0, static_cast<int>(std::ceil(pixels.width() / ratio - 1e-6)),
                        static_cast<int>(std::ceil(pixels.height() / ratio - 1e-6)));
    view.renderTo(painter, logical, options.title, options.themed);
  }
  // Set after painting: only the file's metadata should carry the dpi, not the font scaling.
  const int dotsPerMeter = qRound(options.dpi / 0.0254);
  image.setDotsPerMeterX(dotsPerMeter);
  image.setDotsPerMeterY(dotsPerMeter);
  return image;
}

QString Exporter::exportView(AttentionView& view, const QString& path,
                             const ExportOptions& requested) {
  if (const QString bad = checkOptions(requested); !bad.isEmpty()) return bad;
  const ExportOptions options = legible(view, requested);
  const QRect rect(0, 0, options.width, options.height);
  return saveAtomically(path, [&](QIODevice& file) -> QString {
    switch (options.format) {
      case ImageFormat::Png: {
        const QImage image = renderImage(view, options);
        if (image.isNull()) return QStringLiteral("out of memory for the image");
        return image.save(&file, "PNG") ? QString() : file.errorString();
      }
      case ImageFormat::Svg: {
        QSvgGenerator svg;
        svg.setOutputDevice(&file);
        svg.setSize(rect.size());
        svg.setViewBox(rect);
        svg.setResolution(96);
        svg.setTitle(options.title);
        svg.setDescription(QStringLiteral("attnscope %1 view").arg(toString(view.kind())));
        QPainter painter;
        if (!painter.begin(&svg)) return QStringLiteral("cannot start the SVG writer");
        painter.setRenderHint(QPainter::LosslessImageRendering);
        painter.fillRect(rect, Qt::white);
        view.renderTo(painter, rect, options.title, options.themed);
        painter.end();
        break;
      }
      case ImageFormat::Pdf: {
        QPdfWriter pdf(&file);
        pdf.setCreator(QStringLiteral("attnscope"));
        pdf.setTitle(options.title);
        // One logical pixel is 1/96 inch, as on screen and in SVG.
        pdf.setPageSize(QPageSize(QSizeF(options.width * 0.75, options.height * 0.75),
                                  QPageSize::Point, QString(), QPageSize::ExactMatch));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf.setResolution(96);
        QPainter painter;
        if (!painter.begin(&pdf)) return QStringLiteral("cannot start the PDF writer");
        // Images (large matrices, colour scales) as Flate, not JPEG: JPEG blurs cell edges into
        // wrong colours. A QPicture replayed into this painter keeps the hint.
        painter.setRenderHint(QPainter::LosslessImageRendering);
        painter.fillRect(rect, Qt::white);
        view.renderTo(painter, rect, options.title, options.themed);
        painter.end();
        break;
      }
    }
    return QString();  // write errors are collected by OutputDevice
  });
}

QString Exporter::exportAllHeads(const ResultPtr& result, const ViewState& state,
                                 const QString& dir, const ExportOptions& options) {
  if (!result) return QStringLiteral("nothing to export: run a model first");
  if (!QDir().mkpath(dir))
    return QStringLiteral("cannot create folder %1").arg(QDir::toNativeSeparators(dir));
  std::unique_ptr<AttentionView> view(createView(ViewKind::Heatmap));
  view->setResult(result);
  for (int l = 0; l < result->group().layers(); ++l) {
    if (!result->group().hasLayer(l)) continue;  // not kept by the run: nothing to draw
    for (int h = 0; h < result->group().heads(); ++h) {
      ViewState s = state;
      s.layer = l;
      s.head = h;
      s.pinnedQuery = -1;
      view->setViewState(s);
      ExportOptions o = options;
      o.title = headTitle(options.title, state, l, h);
      const QString path = QDir(dir).filePath(
          QStringLiteral("heatmap_L%1_H%2.%3").arg(l).arg(h).arg(extensionOf(options.format)));
      if (const QString error = exportView(*view, path, o); !error.isEmpty()) return error;
    }
  }
  return {};
}

QString Exporter::headTitle(const QString& title, const ViewState& state, int layer, int head) {
  const QString where = QStringLiteral("layer %1, head %2").arg(layer).arg(head);
  if (title.isEmpty()) return where.at(0).toUpper() + where.mid(1);
  // The window's default title names the current head: that part becomes this file's head.
  const QString current = QStringLiteral("layer %1, head %2").arg(state.layer).arg(state.head);
  const QRegularExpression named(QStringLiteral("\\b") + QRegularExpression::escape(current) +
                                 QStringLiteral("\\b"));
  QString out = title;
  if (out.contains(named)) return out.replace(named, where);
  return title + QStringLiteral(" — ") + where;
}

QString Exporter::tokenLabelsPath(const QString& npyPath) {
  const QFileInfo info(npyPath);
  return info.dir().filePath(info.completeBaseName() + QStringLiteral(".tokens.json"));
}

QString Exporter::exportAttentionNpy(const AttentionResult& result, const QString& path) {
  if (result.group().onDemand())
    return QStringLiteral(
        "the attention of this run is recomputed on demand (a long input): there is no [L, B, H, "
        "T, T] array to write; export the heatmap or CSV of a head, or use attnscope-cli analyze "
        "--measure long-range");
  try {
    const std::string bytes = npyBytes(result.group().attention);
    if (QString e =
            writeBytes(path, QByteArray(bytes.data(), static_cast<qsizetype>(bytes.size())));
        !e.isEmpty())
      return e;
  } catch (const std::exception& e) {
    return cannotWrite(path, QString::fromUtf8(e.what()));
  }
  // The labels of the last two axes, so a notebook can name what it loads.
  const AttentionGroup& g = result.group();
  QJsonArray items;
  for (int b = 0; b < g.batch(); ++b) {
    const auto none = std::vector<Token>{};
    const auto& queries =
        b < static_cast<int>(g.tokens.size()) ? g.tokens[static_cast<std::size_t>(b)] : none;
    const auto& keys = b < static_cast<int>(g.tokens.size()) ? g.keyTokens(b) : none;
    items.append(QJsonObject{{QStringLiteral("item"), b},
                             {QStringLiteral("queries"), tokenArray(queries, queryLabels(g, b))},
                             {QStringLiteral("keys"), tokenArray(keys, keyLabels(g, b))}});
  }
  QJsonArray shape;
  for (std::size_t i = 0; i < g.attention.rank(); ++i)
    shape.append(static_cast<qint64>(g.attention.dim(i)));
  const QJsonObject root{
      {QStringLiteral("array"), QFileInfo(path).fileName()},
      {QStringLiteral("axes"),
       QJsonArray{QStringLiteral("layer"), QStringLiteral("item"), QStringLiteral("head"),
                  QStringLiteral("query"), QStringLiteral("key")}},
      {QStringLiteral("shape"), shape},
      {QStringLiteral("items"), items}};
  return writeBytes(tokenLabelsPath(path), QJsonDocument(root).toJson(QJsonDocument::Indented));
}

QString Exporter::exportAttentionCsv(const AttentionResult& result, const QString& path) {
  return saveAtomically(path, [&](QIODevice& file) -> QString {
    // Real tokens only: padded rows and columns carry no attention.
    QByteArray out = "layer,item,head,query,key,weight,query_token,key_token\n";
    char line[96];
    for (int l = 0; l < result.group().layers(); ++l) {
      if (!result.group().hasLayer(l)) continue;  // layers the run did not keep have no weights
      for (int b = 0; b < result.group().batch(); ++b) {
        const int queries = realQueries(result.group(), b), keys = realKeys(result.group(), b);
        QList<QByteArray> queryTokens, keyTokens;
        for (const QString& s : queryLabels(result.group(), b)) queryTokens << csvField(s);
        for (const QString& s : keyLabels(result.group(), b)) keyTokens << csvField(s);
        // On demand: one query row recomputed at a time (attentionRows), never a head's T × T.
        const AttentionGroup& g = result.group();
        std::vector<float> row(g.onDemand() ? static_cast<std::size_t>(g.keys()) : 0);
        for (int h = 0; h < g.heads(); ++h) {
          const float* m = g.onDemand() ? nullptr : g.headMatrix(l, b, h);
          for (int q = 0; q < queries; ++q) {
            const float* weights = m ? m + static_cast<std::size_t>(q) * g.keys() : row.data();
            if (!m) attentionRows(g, l, b, h, q, q + 1, row.data());
            for (int k = 0; k < keys; ++k) {
              const int n = std::snprintf(line, sizeof line, "%d,%d,%d,%d,%d,%.9g,", l, b, h, q, k,
                                          static_cast<double>(weights[k]));
              out.append(line, n);
              out.append(queryTokens.value(q)).append(',').append(keyTokens.value(k)).append('\n');
            }
          }
          if (out.size() > (1 << 22)) {
            if (file.write(out) != out.size()) return file.errorString();
            out.clear();
          }
        }
      }
    }
    return file.write(out) == out.size() ? QString() : file.errorString();
  });
}

QString Exporter::exportTraceJson(const AttentionResult& result, const QString& path) {
  const std::string json = traceJson(result);
  return writeBytes(path, QByteArray(json.data(), static_cast<qsizetype>(json.size())));
}

}  // namespace attnscope::render
