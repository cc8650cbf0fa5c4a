// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QDialog>

#include <optional>

#include "exporter.h"

class QLineEdit;
class QSpinBox;

namespace attnscope::gui {

/// Asks for the size, resolution and title of an image export before the file dialog.
class ExportDialog final : public QDialog {
  Q_OBJECT
 public:
  ExportDialog(render::ImageFormat format, const render::ExportOptions& defaults,
               QWidget* parent = nullptr);
  render::ExportOptions options() const;

  /// Runs the dialog; nullopt when cancelled.
  static std::optional<render::ExportOptions> ask(QWidget* parent, render::ImageFormat format,
                                                  const render::ExportOptions& defaults);

 private:
  render::ImageFormat m_format;
  QSpinBox* m_width;
  QSpinBox* m_height;
  QSpinBox* m_dpi;
  QLineEdit* m_title;
};

}  // namespace attnscope::gui
