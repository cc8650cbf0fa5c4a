// SPDX-License-Identifier: GPL-3.0-or-later
#include "exporter.h"

#include <QDir>
#include <QFileInfo>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>

#include <cstdio>
#include <exception>
#include <memory>

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

// Opens a QSaveFile, lets `write` fill it, and commits only when everything succeeded, so a
// failure leaves the previous file (or none) in place.
template <typename Write>
QString saveAtomically(const QString& path, Write write) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return cannotWrite(path, file.errorString());
  QString error;
  try {
    error = write(file);
  } catch (const std::exception& e) {
    error = QString::fromUtf8(e.what());
  }
  if (!error.isEmpty()) {
    file.cancelWriting();
    return cannotWrite(path, error);
  }
  if (!file.commit()) return cannotWrite(path, file.errorString());
  return {};
}

QString writeBytes(const QString& path, const QByteArray& bytes) {
  return saveAtomically(path, [&](QSaveFile& file) -> QString {
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

}  // namespace

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

QImage Exporter::renderImage(AttentionView& view, const ExportOptions& options) {
  // Logical size × dpi/96 pixels: text and lines keep their proportions at any dpi.
  const double ratio = options.dpi / 96.0;
  QImage image(qRound(options.width * ratio), qRound(options.height * ratio),
               QImage::Format_ARGB32_Premultiplied);
  if (image.isNull()) return image;
  image.setDevicePixelRatio(ratio);
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    view.renderTo(painter, QRect(0, 0, options.width, options.height), options.title);
  }
  // Set after painting: only the file's metadata should carry the dpi, not the font scaling.
  const int dotsPerMeter = qRound(options.dpi / 0.0254);
  image.setDotsPerMeterX(dotsPerMeter);
  image.setDotsPerMeterY(dotsPerMeter);
  return image;
}

QString Exporter::exportView(AttentionView& view, const QString& path,
                             const ExportOptions& options) {
  if (const QString bad = checkOptions(options); !bad.isEmpty()) return bad;
  const QRect rect(0, 0, options.width, options.height);
  return saveAtomically(path, [&](QSaveFile& file) -> QString {
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
        painter.fillRect(rect, Qt::white);
        view.renderTo(painter, rect, options.title);
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
        painter.fillRect(rect, Qt::white);
        view.renderTo(painter, rect, options.title);
        painter.end();
        break;
      }
    }
    return file.error() == QFileDevice::NoError ? QString() : file.errorString();
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
    for (int h = 0; h < result->group().heads(); ++h) {
      ViewState s = state;
      s.layer = l;
      s.head = h;
      s.pinnedQuery = -1;
      view->setViewState(s);
      ExportOptions o = options;
      const QString where = QStringLiteral("layer %1, head %2").arg(l).arg(h);
      o.title = options.title.isEmpty() ? where.at(0).toUpper() + where.mid(1)
                                        : options.title + QStringLiteral(" — ") + where;
      const QString path = QDir(dir).filePath(
          QStringLiteral("heatmap_L%1_H%2.%3").arg(l).arg(h).arg(extensionOf(options.format)));
      if (const QString error = exportView(*view, path, o); !error.isEmpty()) return error;
    }
  }
  return {};
}

QString Exporter::exportAttentionNpy(const AttentionResult& result, const QString& path) {
  try {
    const std::string bytes = npyBytes(result.group().attention);
    return writeBytes(path, QByteArray(bytes.data(), static_cast<qsizetype>(bytes.size())));
  } catch (const std::exception& e) {
    return cannotWrite(path, QString::fromUtf8(e.what()));
  }
}

QString Exporter::exportAttentionCsv(const AttentionResult& result, const QString& path) {
  return saveAtomically(path, [&](QSaveFile& file) -> QString {
    // Real tokens only: padded rows and columns carry no attention.
    QByteArray out = "layer,item,head,query,key,weight\n";
    char line[96];
    for (int l = 0; l < result.group().layers(); ++l) {
      for (int b = 0; b < result.group().batch(); ++b) {
        const int queries = realQueries(result.group(), b), keys = realKeys(result.group(), b);
        for (int h = 0; h < result.group().heads(); ++h) {
          const float* m = result.group().headMatrix(l, b, h);
          for (int q = 0; q < queries; ++q) {
            for (int k = 0; k < keys; ++k) {
              const int n = std::snprintf(
                  line, sizeof line, "%d,%d,%d,%d,%d,%.9g\n", l, b, h, q, k,
                  static_cast<double>(m[static_cast<std::size_t>(q) * result.group().keys() + k]));
              out.append(line, n);
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
