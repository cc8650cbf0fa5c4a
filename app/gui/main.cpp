// SPDX-License-Identifier: GPL-3.0-or-later
// attnscope: the desktop window. Parses the command line, builds the document and the window, runs.
#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QTimer>

#include <string>
#include <vector>

#include "attnscope/runtime.h"
#include "command_line.h"
#include "document.h"
#include "main_window.h"
#include "settings.h"

int main(int argc, char** argv) {
  // Before the compute thread exists: OpenBLAS's kernel table is replaced in place.
  attnscope::chooseBlasKernels();
  // Qt would swallow "--session FILE" as X11 session management: hand it the joined form.
  std::vector<std::string> args = attnscope::gui::sessionSafeArguments(argc, argv);
  std::vector<char*> argvSafe;
  for (std::string& a : args) argvSafe.push_back(a.data());
  argvSafe.push_back(nullptr);
  int argcSafe = static_cast<int>(args.size());
  QApplication app(argcSafe, argvSafe.data());
  QApplication::setOrganizationName(QStringLiteral("attnscope"));
  QApplication::setApplicationName(QStringLiteral("attnscope"));
  QApplication::setApplicationVersion(QStringLiteral(ATTNSCOPE_VERSION));
  QApplication::setDesktopFileName(QStringLiteral("attnscope"));
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/attnscope.svg")));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QStringLiteral("See what every attention head of a transformer does."));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption text(
      {QStringLiteral("t"), QStringLiteral("text")},
      QStringLiteral("Input text; repeat for a batch (one sentence each)."),
      QStringLiteral("TEXT"));
  const QCommandLineOption model(
      {QStringLiteral("m"), QStringLiteral("model")},
      QStringLiteral("Model: default (the bundled trained tiny GPT), toy, a .safetensors "
                     "checkpoint, a Hugging Face model folder, a GGUF file, or a cached model name "
                     "(gpt2)."),
      QStringLiteral("M"));
  const QCommandLineOption session({QStringLiteral("s"), QStringLiteral("session")},
                                   QStringLiteral("Open a saved .attnscope session."),
                                   QStringLiteral("FILE"));
  QCommandLineOption quitAfter(QStringLiteral("quit-after"),
                               QStringLiteral("Close after MS milliseconds (tests)."),
                               QStringLiteral("MS"));
  quitAfter.setFlags(QCommandLineOption::HiddenFromHelp);
  parser.addOptions({text, model, session, quitAfter});
  parser.addPositionalArgument(QStringLiteral("file"),
                               QStringLiteral("A session (.attnscope) to open."),
                               QStringLiteral("[file]"));
  parser.process(app);

  attnscope::gui::MainWindow::StartOptions start;
  start.sessionPath =
      parser.isSet(session) ? parser.value(session) : parser.positionalArguments().value(0);
  if (parser.isSet(text)) start.text = parser.values(text).join(QLatin1Char('\n'));
  if (parser.isSet(model)) start.model = parser.value(model);

  attnscope::gui::Settings settings;
  attnscope::gui::Document document;
  attnscope::gui::MainWindow window(&document, &settings);
  window.start(start);
  window.show();
  if (parser.isSet(quitAfter))
    QTimer::singleShot(parser.value(quitAfter).toInt(), &window, &QWidget::close);
  return app.exec();
}
