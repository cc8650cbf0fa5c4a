// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QImage>
#include <QSize>
#include <QString>

#include "attention_view.h"

namespace attnscope::render {

enum class ImageFormat { Png, Svg, Pdf };
bool parseImageFormat(const QString& s, ImageFormat* out);  // "png" | "svg" | "pdf"

struct ExportOptions {
  ImageFormat format = ImageFormat::Png;
  int width = 1200, height = 900;  // logical size of the drawing
  int dpi = 150;                   // PNG: pixels = size × dpi / 96; SVG/PDF resolution
  QString title;                   // drawn above the view
  bool themed = false;             // the window's colours (its theme) instead of dark on white
  /// PNG only: when valid, the exact pixel size of the file; the drawing's logical size is then
  /// pixelSize × 96 / dpi (width and height are ignored), so dpi scales text and lines only.
  QSize pixelSize;

  /// ExportOptions for a PNG of exactly `pixels` at `dpi`.
  static ExportOptions png(const QSize& pixels, int dpi);
  /// The pixel size a PNG export writes.
  QSize pngPixelSize() const;
};

/// Renders views to files. Writes are atomic (QSaveFile): a failed export leaves no partial file.
/// Each function returns an empty string on success, else a message a person can act on.
/// SVG and PDF are vector: text stays text, and the cells of every matrix up to
/// MatrixPainter::kMaxVectorCells (256 × 256) are rectangles; larger matrices are one lossless
/// image each (PNG-encoded in SVG, Flate in PDF, never JPEG).
class Exporter final {
 public:
  static QString exportView(AttentionView& view, const QString& path, const ExportOptions& options);
  static QImage renderImage(AttentionView& view, const ExportOptions& options);
  /// One file per head (<dir>/heatmap_L<l>_H<h>.<ext>) using a heatmap view with the given state.
  /// Each file's title names its own head: "layer L, head H" of the state's head in
  /// options.title becomes the file's head, and a title without it gets " — layer l, head h".
  static QString exportAllHeads(const ResultPtr& result, const ViewState& state, const QString& dir,
                                const ExportOptions& options);
  /// attention as .npy ([layers, batch, heads, query, key]) with the token labels beside it in
  /// tokenLabelsPath(path), or .csv (one row per layer, item, head, query, key, weight, with the
  /// query's and the key's token labels in the last two columns); the trace as .json.
  static QString exportAttentionNpy(const AttentionResult& result, const QString& path);
  static QString exportAttentionCsv(const AttentionResult& result, const QString& path);
  static QString exportTraceJson(const AttentionResult& result, const QString& path);
  /// <dir>/<stem>.tokens.json for <dir>/<stem>.npy: per batch item the labels and ids of the
  /// query and key tokens (the .npy's last two axes), real lengths only.
  static QString tokenLabelsPath(const QString& npyPath);
  /// The title of one head's file in exportAllHeads.
  static QString headTitle(const QString& title, const ViewState& state, int layer, int head);
};

}  // namespace attnscope::render
