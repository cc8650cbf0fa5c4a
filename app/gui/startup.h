// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QString>

#include <functional>
#include <optional>
#include <string>

#include "session.h"

namespace attnscope::gui {

/// What the command line asked for. Without a session or text, the last configuration returns.
struct StartOptions {
  QString sessionPath;
  std::optional<QString> text;
  std::optional<QString> model;
  /// Where the bundled model is; unset: attnscope::defaultModelPath() (tests point it away).
  std::optional<QString> bundledModel;
};

/// What the window remembers between runs, as start-up needs it (absent without settings).
struct RememberedState {
  std::optional<Session> lastConfiguration;
  QString palette;
  bool classroom = false;
};

/// How the window starts: the session to load and what to tell the user about it.
struct StartPlan {
  Session session;
  QString sessionPath;          // absolute path of the session file opened, empty for none
  QString error;                // the session file could not be opened: shown in the banner
  QString statusMessage;        // a remembered model is gone: shown briefly in the status bar
  bool bundledMissing = false;  // the bundled model was wanted but is not there: the toy is shown
};

/// Decides the first session from the command line, what was remembered and which models can be
/// opened, without any widget: the command line wins over the remembered configuration, which
/// wins over the bundled model (or the toy layer when it is missing). A remembered model that
/// cannot be opened again (a training snapshot that lived in memory, a deleted folder) is not
/// restored. `canRestore(source, haveBundled)` says whether a remembered source still opens.
StartPlan initialSession(const StartOptions& options,
                         const std::optional<RememberedState>& remembered, bool haveBundled,
                         const std::function<bool(const std::string&, bool)>& canRestore);

/// The check initialSession uses in the application: toy always, the bundled model when present,
/// never an in-memory snapshot, a path that exists, or a name in the Hugging Face cache.
bool canRestoreSource(const std::string& source, bool haveBundled);

/// The text the window opens on when nothing else is asked for.
QString defaultStartText();

}  // namespace attnscope::gui
