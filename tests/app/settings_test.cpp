// SPDX-License-Identifier: GPL-3.0-or-later
#include <QTemporaryDir>
#include <QTest>

#include "qtest_main.h"
#include "settings.h"

using attnscope::gui::Settings;

class SettingsTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void defaultsAndRoundTrip() {
    QTemporaryDir dir;
    const QString ini = dir.filePath(QStringLiteral("s.ini"));
    {
      Settings s(ini);
      QCOMPARE(s.palette(), QStringLiteral("viridis"));
      QVERIFY(!s.classroomMode());
      QVERIFY(!s.lastConfiguration());
      s.setPalette(QStringLiteral("magma"));
      s.setClassroomMode(true);
      attnscope::gui::Session session;
      session.text = QStringLiteral("remember me");
      session.model.toy.heads = 8;
      s.setLastConfiguration(session);
    }
    Settings s(ini);
    QCOMPARE(s.palette(), QStringLiteral("magma"));
    QVERIFY(s.classroomMode());
    QVERIFY(s.lastConfiguration());
    QCOMPARE(s.lastConfiguration()->text, QStringLiteral("remember me"));
    QCOMPARE(s.lastConfiguration()->model.toy.heads, 8);
  }

  void unknownPaletteFallsBack() {
    QTemporaryDir dir;
    Settings s(dir.filePath(QStringLiteral("s.ini")));
    s.setPalette(QStringLiteral("rainbow"));
    QCOMPARE(s.palette(), QStringLiteral("viridis"));
  }

  void recentSessionsAreMostRecentFirstAndBounded() {
    QTemporaryDir dir;
    Settings s(dir.filePath(QStringLiteral("s.ini")));
    for (int i = 0; i < 12; ++i) s.addRecentSession(QStringLiteral("/tmp/s%1.attnscope").arg(i));
    s.addRecentSession(QStringLiteral("/tmp/s5.attnscope"));
    const QStringList recent = s.recentSessions();
    QCOMPARE(recent.size(), Settings::kMaxRecentSessions);
    QCOMPARE(recent.first(), QStringLiteral("/tmp/s5.attnscope"));
    QCOMPARE(recent.at(1), QStringLiteral("/tmp/s11.attnscope"));
    QCOMPARE(recent.count(QStringLiteral("/tmp/s5.attnscope")), 1);
    s.removeRecentSession(QStringLiteral("/tmp/s5.attnscope"));
    QVERIFY(!s.recentSessions().contains(QStringLiteral("/tmp/s5.attnscope")));
    s.clearRecentSessions();
    QVERIFY(s.recentSessions().isEmpty());
  }
};

ATTNSCOPE_QTEST(SettingsTest)
#include "settings_test.moc"
