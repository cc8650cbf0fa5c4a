// SPDX-License-Identifier: GPL-3.0-or-later
#include "export_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>

namespace attnscope::gui {

ExportDialog::ExportDialog(render::ImageFormat format, const render::ExportOptions& d,
                           QWidget* parent)
    : QDialog(parent),
      m_format(format),
      m_width(new QSpinBox(this)),
      m_height(new QSpinBox(this)),
      m_dpi(new QSpinBox(this)),
      m_title(new QLineEdit(d.title, this)) {
  const QString name = format == render::ImageFormat::Png   ? QStringLiteral("PNG")
                       : format == render::ImageFormat::Svg ? QStringLiteral("SVG")
                                                            : QStringLiteral("PDF");
  setWindowTitle(tr("Export %1").arg(name));
  m_width->setRange(200, 10000);
  m_height->setRange(150, 10000);
  m_dpi->setRange(48, 1200);
  m_width->setValue(d.width);
  m_height->setValue(d.height);
  m_dpi->setValue(d.dpi);
  m_width->setSuffix(tr(" px"));
  m_height->setSuffix(tr(" px"));
  m_dpi->setSuffix(tr(" dpi"));
  m_title->setPlaceholderText(tr("Drawn above the view"));

  auto* form = new QFormLayout(this);
  form->addRow(tr("Title:"), m_title);
  form->addRow(tr("Width:"), m_width);
  form->addRow(tr("Height:"), m_height);
  form->addRow(tr("Resolution:"), m_dpi);
  auto* pixels = new QLabel(this);
  form->addRow(QString(), pixels);
  const auto updatePixels = [this, pixels] {
    const int w = m_width->value() * m_dpi->value() / 96,
              h = m_height->value() * m_dpi->value() / 96;
    pixels->setText(m_format == render::ImageFormat::Png
                        ? tr("Image: %1 × %2 pixels").arg(w).arg(h)
                        : tr("Vector output; resolution applies to raster parts"));
  };
  connect(m_width, &QSpinBox::valueChanged, this, updatePixels);
  connect(m_height, &QSpinBox::valueChanged, this, updatePixels);
  connect(m_dpi, &QSpinBox::valueChanged, this, updatePixels);
  updatePixels();

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  form->addRow(buttons);
}

render::ExportOptions ExportDialog::options() const {
  render::ExportOptions o;
  o.format = m_format;
  o.width = m_width->value();
  o.height = m_height->value();
  o.dpi = m_dpi->value();
  o.title = m_title->text();
  return o;
}

std::optional<render::ExportOptions> ExportDialog::ask(QWidget* parent, render::ImageFormat format,
                                                       const render::ExportOptions& defaults) {
  ExportDialog dialog(format, defaults, parent);
  if (dialog.exec() != QDialog::Accepted) return std::nullopt;
  return dialog.options();
}

}  // namespace attnscope::gui
