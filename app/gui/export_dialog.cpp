// SPDX-License-Identifier: GPL-3.0-or-later
#include "export_dialog.h"

#include <QCheckBox>
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
      m_title(new QLineEdit(d.title, this)),
      m_themed(new QCheckBox(tr("In the window's colours (its theme: a dark theme exports dark)"),
                             this)) {
  const QString name = format == render::ImageFormat::Png   ? QStringLiteral("PNG")
                       : format == render::ImageFormat::Svg ? QStringLiteral("SVG")
                                                            : QStringLiteral("PDF");
  setWindowTitle(tr("Export %1").arg(name));
  m_width->setRange(200, 10000);
  m_height->setRange(150, 10000);
  m_dpi->setRange(48, 1200);
  // PNG: the size typed is the file's pixel size; the resolution scales text and lines.
  const bool png = format == render::ImageFormat::Png;
  m_width->setValue(png && d.pixelSize.isValid() ? d.pixelSize.width() : d.width);
  m_height->setValue(png && d.pixelSize.isValid() ? d.pixelSize.height() : d.height);
  m_dpi->setValue(d.dpi);
  m_width->setSuffix(tr(" px"));
  m_height->setSuffix(tr(" px"));
  m_dpi->setSuffix(tr(" dpi"));
  m_title->setPlaceholderText(tr("Drawn above the view"));

  auto* form = new QFormLayout(this);
  form->addRow(tr("Title:"), m_title);
  form->addRow(png ? tr("Image width:") : tr("Width:"), m_width);
  form->addRow(png ? tr("Image height:") : tr("Height:"), m_height);
  form->addRow(png ? tr("Text resolution:") : tr("Resolution:"), m_dpi);
  m_themed->setObjectName(QStringLiteral("exportThemed"));
  m_themed->setChecked(d.themed);
  m_themed->setToolTip(tr("Off: dark on white, the same for every theme (slides, papers)"));
  form->addRow(QString(), m_themed);
  auto* pixels = new QLabel(this);
  pixels->setObjectName(QStringLiteral("exportSizeNote"));
  pixels->setWordWrap(true);
  form->addRow(QString(), pixels);
  const auto updatePixels = [this, pixels] {
    if (m_format == render::ImageFormat::Png) {
      pixels->setText(tr("The file is %1 × %2 pixels; text and lines are drawn as at %3 dpi "
                         "(%4 × %5 cm printed at that resolution)")
                          .arg(m_width->value())
                          .arg(m_height->value())
                          .arg(m_dpi->value())
                          .arg(m_width->value() * 2.54 / m_dpi->value(), 0, 'f', 1)
                          .arg(m_height->value() * 2.54 / m_dpi->value(), 0, 'f', 1));
    } else {
      pixels->setText(tr("Vector output, %1 × %2 cm (1 px = 1/96 inch); matrices up to "
                         "256 × 256 cells as rectangles, larger ones as lossless images")
                          .arg(m_width->value() * 2.54 / 96, 0, 'f', 1)
                          .arg(m_height->value() * 2.54 / 96, 0, 'f', 1));
    }
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
  if (m_format == render::ImageFormat::Png) {
    o = render::ExportOptions::png(QSize(m_width->value(), m_height->value()), m_dpi->value());
  } else {
    o.format = m_format;
    o.width = m_width->value();
    o.height = m_height->value();
    o.dpi = m_dpi->value();
  }
  o.title = m_title->text();
  o.themed = m_themed->isChecked();
  return o;
}

std::optional<render::ExportOptions> ExportDialog::ask(QWidget* parent, render::ImageFormat format,
                                                       const render::ExportOptions& defaults) {
  ExportDialog dialog(format, defaults, parent);
  if (dialog.exec() != QDialog::Accepted) return std::nullopt;
  return dialog.options();
}

}  // namespace attnscope::gui
