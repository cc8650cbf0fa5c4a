// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QObject>
#include <QString>

#include "exporter.h"

class QWidget;

namespace attnscope::gui {

class Document;
class ViewTabs;

/// The folder the file dialogs open in: the last one the user chose, shared by exports,
/// sessions and text files.
struct LastFolder {
  QString path;
};

/// Everything the File › Export menu and Copy View Image do: ask for options and a path, render
/// the current view (or every head, or the data) and report the outcome.
class ExportActions final : public QObject {
  Q_OBJECT
 public:
  ExportActions(const Document* document, ViewTabs* tabs, LastFolder* folder,
                QWidget* dialogParent);

  /// The title exports get: view, head, model, and what the view leaves out.
  QString defaultTitle() const;

  void exportImage(render::ImageFormat format);
  void copyImage();
  void exportAllHeads();
  /// kind: "npy", "csv" or "json" (the trace).
  void exportData(const QString& kind);

 Q_SIGNALS:
  void failed(const QString& what, const QString& reason);
  void finished(const QString& message);

 private:
  QString defaultExportName(const QString& extension) const;
  render::ExportOptions defaultExportOptions(render::ImageFormat format) const;
  void report(const QString& error, const QString& done);
  bool haveResult(const QString& what);

  const Document* m_document;
  ViewTabs* m_tabs;
  LastFolder* m_folder;
  QWidget* m_parent;
};

}  // namespace attnscope::gui
