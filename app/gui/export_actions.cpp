// SPDX-License-Identifier: GPL-3.0-or-later
#include "export_actions.h"

#include <QClipboard>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>

#include <algorithm>

#include "alignment_view.h"
#include "document.h"
#include "export_dialog.h"
#include "head_matrix.h"
#include "view_subject.h"
#include "view_tabs.h"

namespace attnscope::gui {

ExportActions::ExportActions(const Document* document, ViewTabs* tabs, LastFolder* folder,
                             QWidget* dialogParent)
    : QObject(dialogParent),
      m_document(document),
      m_tabs(tabs),
      m_folder(folder),
      m_parent(dialogParent) {}

QString ExportActions::defaultTitle() const {
  const render::ViewState& s = m_document->viewState();
  const QString model =
      m_document->modelInfo() ? QString::fromStdString(m_document->modelInfo()->name) : QString();
  const render::ViewKind kind = m_tabs->currentKind();
  // What this view shows: one head, all of them, both of compare's, … (as attnscope-cli names it).
  const auto* alignment =
      qobject_cast<const render::AlignmentView*>(m_tabs->view(render::ViewKind::Alignment));
  const bool estimate = m_document->ablation().phase == render::AblationStatus::Phase::Done &&
                        m_document->ablation().estimate;
  QString title = tr("%1 — %2").arg(
      m_tabs->tabText(m_tabs->currentIndex()),
      render::viewSubject(kind, s, alignment && alignment->allLayers(), estimate));
  if (!model.isEmpty()) title += QStringLiteral(" — ") + model;
  const bool matrixView = kind == render::ViewKind::Heatmap || kind == render::ViewKind::Grid ||
                          kind == render::ViewKind::Compare;
  if (s.hideSpecial && matrixView && m_document->result() &&
      render::hasSpecialTokens(m_document->result()->group(s.group), s.item)) {
    title += QStringLiteral(" — ") + render::hiddenSpecialNote(s.showScores);
  }
  return title;
}

QString ExportActions::defaultExportName(const QString& extension) const {
  const render::ViewState& s = m_document->viewState();
  return QDir(m_folder->path)
      .filePath(QStringLiteral("attnscope-%1-L%2-H%3.%4")
                    .arg(render::toString(m_tabs->currentKind()))
                    .arg(s.layer)
                    .arg(s.head)
                    .arg(extension));
}

render::ExportOptions ExportActions::defaultExportOptions(render::ImageFormat format) const {
  render::ExportOptions o;
  o.format = format;
  o.title = defaultTitle();
  return o;
}

void ExportActions::report(const QString& error, const QString& done) {
  if (!error.isEmpty())
    Q_EMIT failed(tr("Export failed"), error);
  else
    Q_EMIT finished(done);
}

bool ExportActions::haveResult(const QString& what) {
  if (m_document->result() && m_tabs->currentView()) return true;
  Q_EMIT failed(what, tr("there is no result yet"));
  return false;
}

void ExportActions::exportImage(render::ImageFormat format) {
  if (!haveResult(tr("Nothing to export"))) return;
  std::optional<render::ExportOptions> options =
      ExportDialog::ask(m_parent, format, defaultExportOptions(format));
  if (!options) return;
  const QString extension = format == render::ImageFormat::Png   ? QStringLiteral("png")
                            : format == render::ImageFormat::Svg ? QStringLiteral("svg")
                                                                 : QStringLiteral("pdf");
  QString path =
      QFileDialog::getSaveFileName(m_parent, tr("Export View"), defaultExportName(extension),
                                   tr("%1 files (*.%2)").arg(extension.toUpper(), extension));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QLatin1Char('.') + extension;
  m_folder->path = QFileInfo(path).absolutePath();
  const QString error = render::Exporter::exportView(*m_tabs->currentView(), path, *options);
  report(error, tr("Exported %1").arg(QFileInfo(path).fileName()));
}

void ExportActions::copyImage() {
  if (!haveResult(tr("Nothing to copy"))) return;
  render::AttentionView* v = m_tabs->currentView();
  render::ExportOptions o = defaultExportOptions(render::ImageFormat::Png);
  o.width = std::max(400, v->width());
  o.height = std::max(300, v->height());
  o.dpi = static_cast<int>(96 * v->devicePixelRatioF());
  const QImage image = render::Exporter::renderImage(*v, o);
  if (image.isNull()) {
    Q_EMIT failed(tr("Copy failed"), tr("the view could not be drawn"));
    return;
  }
  QGuiApplication::clipboard()->setImage(image);
  Q_EMIT finished(tr("Copied the view to the clipboard"));
}

void ExportActions::exportAllHeads() {
  if (!haveResult(tr("Nothing to export"))) return;
  std::optional<render::ExportOptions> options = ExportDialog::ask(
      m_parent, render::ImageFormat::Png, defaultExportOptions(render::ImageFormat::Png));
  if (!options) return;
  const QString dir =
      QFileDialog::getExistingDirectory(m_parent, tr("Export All Heads to Folder"), m_folder->path);
  if (dir.isEmpty()) return;
  m_folder->path = dir;
  const QString error = render::Exporter::exportAllHeads(m_document->result(),
                                                         m_document->viewState(), dir, *options);
  report(error, tr("Exported every head to %1").arg(dir));
}

void ExportActions::exportData(const QString& kind) {
  const render::ResultPtr result = m_document->result();
  if (!result) {
    Q_EMIT failed(tr("Nothing to export"), tr("there is no result yet"));
    return;
  }
  const QString stem = kind == QStringLiteral("json") ? QStringLiteral("attnscope-trace")
                                                      : QStringLiteral("attnscope-attention");
  QString path = QFileDialog::getSaveFileName(
      m_parent, tr("Export Data"), QDir(m_folder->path).filePath(stem + QLatin1Char('.') + kind),
      tr("%1 files (*.%2)").arg(kind.toUpper(), kind));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QLatin1Char('.') + kind;
  m_folder->path = QFileInfo(path).absolutePath();
  QString error;
  if (kind == QStringLiteral("npy"))
    error = render::Exporter::exportAttentionNpy(*result, path);
  else if (kind == QStringLiteral("csv"))
    error = render::Exporter::exportAttentionCsv(*result, path);
  else
    error = render::Exporter::exportTraceJson(*result, path);
  report(error, tr("Exported %1").arg(QFileInfo(path).fileName()));
}

}  // namespace attnscope::gui
