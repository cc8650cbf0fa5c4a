// SPDX-License-Identifier: GPL-3.0-or-later
// The start-up decision without a window: what the command line, the remembered configuration
// and the installed models make the first session; and the session actions' refusals.
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "attnscope/model.h"
#include "attnscope/toy_config.h"
#include "document.h"
#include "export_actions.h"
#include "qtest_main.h"
#include "session_actions.h"
#include "session_file.h"
#include "startup.h"

using namespace attnscope::gui;

namespace {

bool restoreAll(const std::string&, bool) { return true; }
bool restoreNone(const std::string&, bool) { return false; }

Session remembered(const std::string& source, const QString& text) {
  Session s;
  s.model.source = source;
  s.text = text;
  s.view.head = 2;
  return s;
}

}  // namespace

class StartupTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void firstStartShowsTheBundledModelOrTheToy() {
    const StartPlan bundled = initialSession({}, std::nullopt, true, restoreAll);
    QCOMPARE(bundled.session.model.source, std::string("default"));
    QCOMPARE(bundled.session.text, defaultStartText());
    QVERIFY(!bundled.bundledMissing);
    const StartPlan missing = initialSession({}, std::nullopt, false, restoreAll);
    QCOMPARE(missing.session.model.source, std::string("toy"));
    QVERIFY(missing.bundledMissing);
  }

  void theLastConfigurationReturnsWhenItCanBeOpened() {
    RememberedState state{remembered("/models/bert", QStringLiteral("last text")),
                          QStringLiteral("magma"), false};
    const StartPlan plan = initialSession({}, state, true, restoreAll);
    QCOMPARE(plan.session.model.source, std::string("/models/bert"));
    QCOMPARE(plan.session.text, QStringLiteral("last text"));
    QCOMPARE(plan.session.view.head, 2);
    QCOMPARE(plan.session.view.palette, QStringLiteral("magma"));
    QVERIFY(plan.statusMessage.isEmpty());

    // A model that is gone is not restored, and the status bar says so.
    const StartPlan gone = initialSession({}, state, true, restoreNone);
    QCOMPARE(gone.session.model.source, std::string("default"));
    QVERIFY(gone.statusMessage.contains(QStringLiteral("/models/bert")));
    QCOMPARE(gone.session.view.palette, QStringLiteral("magma"));
  }

  void aTrainingSnapshotIsNeverRestored() {
    QVERIFY(!canRestoreSource("memory:step 300", true));
    QVERIFY(canRestoreSource("toy", false));
    QVERIFY(!canRestoreSource("default", false));
    QVERIFY(!canRestoreSource("/no/such/folder", true));
  }

  void theCommandLineWins() {
    RememberedState state{remembered("toy", QStringLiteral("last")), QString(), true};
    StartOptions options;
    options.text = QStringLiteral("typed");
    options.model = QStringLiteral("gpt2");
    const StartPlan plan = initialSession(options, state, false, restoreAll);
    QCOMPARE(plan.session.text, QStringLiteral("typed"));
    QCOMPARE(plan.session.model.source, std::string("gpt2"));
    QVERIFY(plan.session.view.classroom);  // the machine's preference
    QVERIFY(!plan.bundledMissing);         // a model was asked for
  }

  void aSessionFileIsLoadedOrReported() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("s.attnscope"));
    Session saved = remembered("toy", QStringLiteral("from the file"));
    QCOMPARE(SessionFile::save(path, saved), QString());
    StartOptions options;
    options.sessionPath = path;
    const StartPlan plan = initialSession(options, std::nullopt, true, restoreAll);
    QVERIFY(plan.error.isEmpty());
    QCOMPARE(plan.session.text, QStringLiteral("from the file"));
    QCOMPARE(plan.sessionPath, QFileInfo(path).absoluteFilePath());

    options.sessionPath = dir.filePath(QStringLiteral("missing.attnscope"));
    const StartPlan bad = initialSession(options, std::nullopt, true, restoreAll);
    QVERIFY(bad.error.contains(QStringLiteral("missing.attnscope")));
    QVERIFY(bad.sessionPath.isEmpty());
    QCOMPARE(bad.session.text, defaultStartText());  // nothing half-loaded
    QVERIFY(!bad.bundledMissing);
  }

  void theDocumentKeepsPathAndModifiedFlag() {
    Document doc;
    QSignalSpy modified(&doc, &Document::modifiedChanged);
    QVERIFY(!doc.isModified());
    doc.setText(QStringLiteral("changed"));
    QVERIFY(doc.isModified());
    doc.setSessionPath(QStringLiteral("/tmp/x.attnscope"));
    QVERIFY(!doc.isModified());
    QCOMPARE(doc.sessionPath(), QStringLiteral("/tmp/x.attnscope"));
    QCOMPARE(modified.count(), 2);
  }

  void aSessionWithAnInMemoryModelIsNotSaved() {
    Document doc;
    LastFolder folder;
    SessionActions actions(&doc, nullptr, &folder, nullptr);
    QSignalSpy failed(&actions, &SessionActions::failed);
    doc.setModel(QStringLiteral("step 300"), attnscope::makeToyModel(attnscope::ToyConfig()));
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("s.attnscope"));
    QVERIFY(!actions.save(path));
    QCOMPARE(failed.count(), 1);
    QVERIFY(failed.at(0).at(1).toString().contains(QStringLiteral("only in memory")));
    QVERIFY(!QFileInfo::exists(path));
    QVERIFY(doc.isModified());  // nothing was saved, nothing is lost
  }
};

ATTNSCOPE_QTEST(StartupTest)
#include "startup_test.moc"
