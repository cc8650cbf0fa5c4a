// SPDX-License-Identifier: GPL-3.0-or-later
// The main of an executable holding several Qt Test classes (qtest_main.h).
//
//   app_render_tests                      every class, each in a process of its own
//   app_render_tests RenderTest [args]    one class, in this process; args as for a QTEST_MAIN
//                                         binary (-functions, a function name, -v2, ...)
//   app_render_tests -classes             the class names
//
// Without a class name, arguments go to every class.
#include "qtest_main.h"

#include <QApplication>
#include <QtTest>

#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace attnscope::test {
namespace {

struct Registered {
  const char* name;
  const char* file;
  const char* buildDir;
  QtTestFactory make;
};

std::vector<Registered>& registry() {
  static std::vector<Registered> classes;
  return classes;
}

// Runs `self` with `name` inserted before the other arguments; its exit status, -1 if it could not
// start or did not exit.
int runInChild(const char* self, const char* name, int argc, char* argv[]) {
  std::vector<char*> args{argv[0], const_cast<char*>(name)};
  args.insert(args.end(), argv + 1, argv + argc);
  args.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, self, nullptr, nullptr, args.data(), environ) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace

int registerQtTest(const char* name, const char* file, const char* buildDir, QtTestFactory make) {
  registry().push_back({name, file, buildDir, make});
  return static_cast<int>(registry().size());
}

}  // namespace attnscope::test

int main(int argc, char* argv[]) {
  using attnscope::test::registry;
  if (argc > 1 && std::strcmp(argv[1], "-classes") == 0) {
    for (const auto& c : registry()) std::printf("%s\n", c.name);
    return 0;
  }
  const attnscope::test::Registered* only = nullptr;
  for (const auto& c : registry()) {
    if (argc > 1 && std::strcmp(argv[1], c.name) == 0) only = &c;
  }

  if (!only) {
    // Each class in a process of its own, as when each had its own executable: Qt Test's mouse
    // state, the cursor, top-level windows and tooltips are process-wide, and in one process
    // LinesViewTest's and TextViewTest's hovers failed after RenderTest. What the merge saves is
    // build time (one link, one AUTOMOC run, one parse of the Qt headers); these classes start
    // no LibTorch of their own beyond what the libraries load.
    std::string failed;
    for (const auto& c : registry()) {
      std::fflush(stdout);
      if (attnscope::test::runInChild("/proc/self/exe", c.name, argc, argv) != 0) {
        failed += failed.empty() ? "" : ", ";
        failed += c.name;
      }
    }
    if (!failed.empty()) {
      std::fprintf(stderr, "FAILED test classes: %s\n", failed.c_str());
      return 1;
    }
    std::printf("All %zu test classes passed\n", registry().size());
    return 0;
  }

  // What QTEST_MAIN does with QtWidgets linked (Qt 6.4's qtest.h: QTEST_QAPP_SETUP(QApplication)
  // and QTEST_DISABLE_KEYPAD_NAVIGATION, the test object after the application, then
  // QTEST_SET_MAIN_SOURCE_PATH); the files that had QTEST_GUILESS_MAIN run under a QApplication
  // too.
  QApplication app(argc, argv);
  app.setAttribute(Qt::AA_Use96Dpi, true);
#ifdef QT_KEYPAD_NAVIGATION
  QApplication::setNavigationMode(Qt::NavigationModeNone);
#endif
  std::unique_ptr<QObject> test = only->make();
  QTest::setMainSourcePath(only->file, only->buildDir);
  std::vector<char*> args(argv, argv + argc);
  args.erase(args.begin() + 1);  // the class name
  return QTest::qExec(test.get(), static_cast<int>(args.size()), args.data());
}
