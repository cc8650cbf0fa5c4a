// SPDX-License-Identifier: GPL-3.0-or-later
// Several Qt Test classes in one executable: one link against Qt and the app libraries, one
// AUTOMOC run and one parse of the QtTest and QtWidgets headers instead of one per class (a
// clean-clone `make test` builds on two cores). A test file ends with ATTNSCOPE_QTEST(Class)
// where it had QTEST_MAIN(Class), and lists qtest_main.cpp beside itself; that main runs every
// registered class, each in a process of its own set up as QTEST_MAIN would, and fails if any
// fails.
#pragma once

#include <QObject>

#include <memory>

namespace attnscope::test {

using QtTestFactory = std::unique_ptr<QObject> (*)();

// Adds a class to the executable's list (at static initialisation). `file` and `buildDir` are what
// QTEST_MAIN hands QTest::setMainSourcePath (the test's source, QT_TESTCASE_BUILDDIR) for
// QFINDTESTDATA. Returns a dummy so that a namespace-scope variable can call it.
int registerQtTest(const char* name, const char* file, const char* buildDir, QtTestFactory make);

}  // namespace attnscope::test

#ifdef QT_TESTCASE_BUILDDIR
#define ATTNSCOPE_QTEST_BUILDDIR QT_TESTCASE_BUILDDIR
#else
#define ATTNSCOPE_QTEST_BUILDDIR nullptr
#endif

#define ATTNSCOPE_QTEST(TestObject)                                                          \
  namespace {                                                                                \
  [[maybe_unused]] const int attnscopeQtest##TestObject = ::attnscope::test::registerQtTest( \
      #TestObject, __FILE__, ATTNSCOPE_QTEST_BUILDDIR,                                       \
      []() -> std::unique_ptr<QObject> { return std::make_unique<TestObject>(); });          \
  }
