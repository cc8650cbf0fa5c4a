// SPDX-License-Identifier: GPL-3.0-or-later
#include "startup.h"

#include <QFileInfo>

#include "attnscope/model_catalog.h"
#include "document.h"
#include "session_file.h"

namespace attnscope::gui {

QString defaultStartText() {
  // The bundled model learnt Shakespeare, so it is shown text in his style: the first line is
  // what the heatmap opens on, the second a second batch item.
  return QStringLiteral("Before we proceed any further, hear me speak.\nAll: Speak, speak.");
}

bool canRestoreSource(const std::string& source, bool haveBundled) {
  if (source == "toy") return true;
  if (source == "default") return haveBundled;
  if (Document::isMemorySource(source)) return false;
  const QString s = QString::fromStdString(source);
  if (s.contains(QLatin1Char('/')) && QFileInfo::exists(s)) return true;
  return resolveCachedModel(source).has_value();
}

StartPlan initialSession(const StartOptions& options,
                         const std::optional<RememberedState>& remembered, bool haveBundled,
                         const std::function<bool(const std::string&, bool)>& canRestore) {
  StartPlan plan;
  plan.session.text = defaultStartText();
  plan.session.model.source = haveBundled ? "default" : "toy";
  bool fellBack = !haveBundled;
  if (remembered) {
    if (const std::optional<Session>& last = remembered->lastConfiguration) {
      if (canRestore(last->model.source, haveBundled)) {
        plan.session = *last;
        fellBack = false;
      } else {
        plan.statusMessage = QStringLiteral("The last model (%1) is not available any more")
                                 .arg(QString::fromStdString(last->model.source));
      }
    }
    if (!remembered->palette.isEmpty()) plan.session.view.palette = remembered->palette;
    plan.session.view.classroom = remembered->classroom;
  }
  if (!options.sessionPath.isEmpty() || options.model) fellBack = false;
  if (!options.sessionPath.isEmpty()) {
    Session loaded = plan.session;
    plan.error = SessionFile::load(options.sessionPath, &loaded);
    if (plan.error.isEmpty()) {
      plan.session = loaded;
      plan.sessionPath = QFileInfo(options.sessionPath).absoluteFilePath();
    }
  }
  if (options.text) plan.session.text = *options.text;
  if (options.model) plan.session.model.source = options.model->toStdString();
  // Classroom mode is the user's preference for this machine, whatever the session says.
  if (remembered && remembered->classroom) plan.session.view.classroom = true;
  plan.bundledMissing = fellBack && plan.error.isEmpty();
  return plan;
}

}  // namespace attnscope::gui
