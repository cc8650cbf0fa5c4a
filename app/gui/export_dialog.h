// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QDialog>

#include <optional>

#include "exporter.h"

class QCheckBox;
class QLineEdit;
class QSpinBox;

namespace attnscope::gui {

/// Asks for the size, resolution and title of an image export before the file dialog. For PNG the
/// size is the file's pixel size (the resolution scales text and lines); for SVG and PDF it is the
/// drawing's size in 1/96 inch.
class ExportDialog final : public QDialog {
  Q_OBJECT
 public:
  ExportDialog(render::ImageFormat format, const render::ExportOptions& defaults,
               QWidget* parent = nullptr);
  render::ExportOptions options() const;
  QSpinBox* widthBox() const { return m_width; }
  QSpinBox* heightBox() const { return m_height; }
  QSpinBox* dpiBox() const { return m_dpi; }

  /// Runs the dialog; nullopt when cancelled.
  static std::optional<render::ExportOptions> ask(QWidget* parent, render::ImageFormat format,
                                                  const render::ExportOptions& defaults);

 private:
  render::ImageFormat m_format;
  QSpinBox* m_width;
  QSpinBox* m_height;
  QSpinBox* m_dpi;
  QLineEdit* m_title;
  QCheckBox* m_themed;
};

}  // namespace attnscope::gui
