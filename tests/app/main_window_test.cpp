// SPDX-License-Identifier: GPL-3.0-or-later
// The window on the offscreen platform: typing reaches the views, a grid click opens the heatmap,
// failures show in the banner and the window keeps working.
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include "attention_view.h"
#include "document.h"
#include "main_window.h"

using attnscope::gui::Document;
using attnscope::gui::MainWindow;
using attnscope::render::ViewKind;

class MainWindowTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void typingUpdatesTheViews() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), QStringLiteral("first"), QStringLiteral("toy"), std::nullopt});
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    // The first result may already have come while the window was being exposed.
    QTRY_VERIFY_WITH_TIMEOUT(results.count() == 1, 20000);

    auto* edit = window.findChild<QPlainTextEdit*>();
    QVERIFY(edit);
    QCOMPARE(edit->toPlainText(), QStringLiteral("first"));
    edit->setFocus();
    edit->moveCursor(QTextCursor::End);
    QTest::keyClicks(edit, QStringLiteral(" and more"));
    QCOMPARE(doc.text(), QStringLiteral("first and more"));
    QTRY_VERIFY_WITH_TIMEOUT(results.count() == 2, 20000);
    QCOMPARE(doc.result()->group().queryLengths.at(0), 14);
    QVERIFY(window.bannerMessage().isEmpty());
  }

  void gridClickOpensTheHeadInTheHeatmap() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), QStringLiteral("abc"), QStringLiteral("toy"), std::nullopt});
    QVERIFY(results.wait(20000));
    auto* tabs = window.findChild<QTabWidget*>();
    tabs->setCurrentWidget(window.view(ViewKind::Grid));
    QVERIFY(doc.currentView() == ViewKind::Grid);
    Q_EMIT window.view(ViewKind::Grid)->headActivated(0, 2);
    QCOMPARE(doc.viewState().head, 2);
    QVERIFY(doc.currentView() == ViewKind::Heatmap);
    QCOMPARE(window.currentView(), window.view(ViewKind::Heatmap));
  }

  void errorsShowInTheBannerAndKeepTheResult() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), QStringLiteral("abc"), QStringLiteral("toy"), std::nullopt});
    QVERIFY(results.wait(20000));
    const auto good = doc.result();

    QTemporaryDir dir;
    const QString binary = dir.filePath(QStringLiteral("image.txt"));
    QFile f(binary);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray("\x89PNG\0\0", 6));
    f.close();
    QVERIFY(!window.loadTextFile(binary));
    QVERIFY2(window.bannerMessage().contains(QStringLiteral("binary")),
             qPrintable(window.bannerMessage()));
    QCOMPARE(doc.text(), QStringLiteral("abc"));

    QVERIFY(!window.openSession(dir.filePath(QStringLiteral("none.attnscope"))));
    QVERIFY(window.bannerMessage().contains(QStringLiteral("none.attnscope")));

    QSignalSpy errors(&doc, &Document::errorChanged);
    attnscope::ModelSpec spec = doc.modelSpec();
    spec.source = "missing-model";
    doc.setModelSpec(spec);
    QVERIFY(errors.wait(20000));
    QVERIFY(window.bannerMessage().contains(QStringLiteral("missing-model")));
    QCOMPARE(doc.result(), good);
  }

  void sessionsSaveAndOpen() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("s.attnscope"));
    {
      Document doc;
      MainWindow window(&doc, nullptr);
      QSignalSpy results(&doc, &Document::resultChanged);
      window.start({QString(), QStringLiteral("saved text"), QStringLiteral("toy"), std::nullopt});
      QVERIFY(results.wait(20000));
      doc.selectHead(0, 3);
      QVERIFY(window.saveSession(path));
    }
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({path, std::nullopt, std::nullopt, std::nullopt});
    QVERIFY(results.wait(20000));
    QCOMPARE(doc.text(), QStringLiteral("saved text"));
    QCOMPARE(doc.viewState().head, 3);
    QVERIFY(window.windowTitle().contains(QStringLiteral("s.attnscope")));
  }
};

QTEST_MAIN(MainWindowTest)
#include "main_window_test.moc"
