// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QImage>
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
};

/// Renders views to files. Writes are atomic (QSaveFile): a failed export leaves no partial file.
/// Each function returns an empty string on success, else a message a person can act on.
class Exporter final {
 public:
  static QString exportView(AttentionView& view, const QString& path, const ExportOptions& options);
  static QImage renderImage(AttentionView& view, const ExportOptions& options);
  /// One file per head (<dir>/<stem>_L<l>_H<h>.<ext>) using a heatmap view with the given state.
  static QString exportAllHeads(const ResultPtr& result, const ViewState& state, const QString& dir,
                                const ExportOptions& options);
  /// attention as .npy ([layers, batch, heads, query, key]) or .csv (one row per layer, item, head,
  /// query, key, weight); the trace as .json.
  static QString exportAttentionNpy(const AttentionResult& result, const QString& path);
  static QString exportAttentionCsv(const AttentionResult& result, const QString& path);
  static QString exportTraceJson(const AttentionResult& result, const QString& path);
};

}  // namespace attnscope::render
