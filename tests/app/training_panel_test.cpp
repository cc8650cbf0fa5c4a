// SPDX-License-Identifier: GPL-3.0-or-later
// The Train tab: a short run draws curves, keeps snapshots the slider can show, saves a checkpoint
// that opens again; Stop ends a long run at once; bad corpora and settings are reported in the
// panel; the window's event loop keeps running while the trainer works; an early stop rescales the
// loss plot; the corpus path can be typed; a message moves no control.
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <algorithm>

#include "attnscope/tiny_gpt.h"
#include "document.h"
#include "loss_plot.h"
#include "qtest_main.h"
#include "training_panel.h"
#include "training_session.h"

using attnscope::TinyGpt;
using attnscope::TrainOptions;
using attnscope::gui::Document;
using attnscope::gui::TrainingPanel;

namespace {

constexpr int kTrainingWaitMs = 60000;

QString writeFile(const QTemporaryDir& dir, const QString& name, const QByteArray& bytes) {
  const QString path = dir.filePath(name);
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return {};
  f.write(bytes);
  return path;
}

QByteArray corpus() {
  QByteArray text;
  for (int i = 0; i < 200; ++i) text += "To be, or not to be, that is the question.\n";
  return text;
}

/// Small enough for a few milliseconds a step on one core.
TrainOptions tinyRun(int steps) {
  TrainOptions o;
  o.model.nLayer = 1;
  o.model.nHead = 2;
  o.model.nEmbd = 16;
  o.model.blockSize = 16;
  o.steps = steps;
  o.batch = 4;
  o.evalEvery = 10;
  o.snapshotEvery = 10;
  o.evalWindows = 4;
  return o;
}

/// The longest gap between ticks of a 10 ms timer while `done` is false: the UI's responsiveness.
template <typename Done>
qint64 longestStallWhile(Done done, int timeoutMs) {
  QElapsedTimer clock, sinceTick;
  clock.start();
  sinceTick.start();
  qint64 longest = 0;
  QTimer ticker;
  ticker.setInterval(10);
  QObject::connect(&ticker, &QTimer::timeout,
                   [&] { longest = std::max(longest, sinceTick.restart()); });
  ticker.start();
  while (!done() && clock.elapsed() < timeoutMs) QTest::qWait(5);
  return longest;
}

/// A document with text and a panel with the test corpus, ready to start `steps` steps.
struct Rig {
  QTemporaryDir dir;
  Document doc;
  TrainingPanel panel{&doc};
  QSignalSpy finished{&panel, &TrainingPanel::runFinished};

  explicit Rig(int steps) {
    doc.setText(QStringLiteral("To be"));
    ready = panel.setCorpusPath(writeFile(dir, QStringLiteral("corpus.txt"), corpus()));
    panel.setOptions(tinyRun(steps), 1);
  }
  bool ready = false;
};

}  // namespace

class TrainingPanelTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // The session alone, without a widget: beyond the limit every second snapshot goes and the
  // newest stays, and a later snapshot at the same step replaces the earlier one.
  void theSessionThinsItsSnapshots() {
    std::vector<attnscope::gui::TrainingSnapshot> kept;
    const int limit = attnscope::gui::TrainingSession::kMaxSnapshots;
    for (int step = 1; step <= limit + 1; ++step)
      attnscope::gui::TrainingSession::keep(kept, {1, step, nullptr});
    QVERIFY(int(kept.size()) <= limit);
    QCOMPARE(kept.back().step, limit + 1);
    QCOMPARE(kept.front().step, 1);
    for (std::size_t i = 1; i < kept.size(); ++i) QVERIFY(kept[i - 1].step < kept[i].step);
    const std::size_t before = kept.size();
    attnscope::gui::TrainingSession::keep(kept, {2, limit + 1, nullptr});
    QCOMPARE(kept.size(), before);
    QCOMPARE(kept.back().run, quint64(2));
  }

  void aShortRunDrawsCurvesAndKeepsSnapshots() {
    Rig rig(30);
    QVERIFY(rig.ready);
    Document& doc = rig.doc;
    TrainingPanel& panel = rig.panel;
    QSignalSpy& finished = rig.finished;
    QSignalSpy results(&doc, &Document::resultChanged);
    QVERIFY(panel.start());
    QVERIFY(panel.isRunning());
    const qint64 stall = longestStallWhile([&] { return finished.count() > 0; }, kTrainingWaitMs);
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.at(0).at(0).toBool(), false);
    QVERIFY2(stall < 1000, qPrintable(QStringLiteral("the event loop stalled %1 ms").arg(stall)));
    QVERIFY2(panel.errorMessage().isEmpty(), qPrintable(panel.errorMessage()));

    QVERIFY(panel.lossPlot()->trainPointCount() > 0);
    QCOMPARE(panel.lossPlot()->validationPointCount(), 3);  // steps 10, 20, 30
    QCOMPARE(panel.snapshotCount(), 3);
    QCOMPARE(panel.selectedSnapshot(), 2);

    // Issue #32 (9): the window's model is left alone until the user asks for the snapshots.
    QCOMPARE(doc.modelSpec().source, attnscope::ModelSpec().source);
    // Asked, the views show the newest weights and follow the training.
    panel.setShowInViews(true);
    QCOMPARE(doc.modelSpec().source, std::string("memory:step 30"));
    // Wait for the snapshot's model, not only for a result: on a loaded machine the toy model's
    // earlier result can still be the current one when the wait starts (a clean-clone CI run
    // failed so).
    QTRY_VERIFY_WITH_TIMEOUT(!doc.isBusy() && doc.result() && doc.modelInfo() &&
                                 doc.modelInfo()->kind == "tiny-gpt" &&
                                 doc.result()->group().heads() == 2,
                             kTrainingWaitMs);
    QCOMPARE(doc.result()->group().heads(), 2);

    // The slider goes back in time.
    panel.selectSnapshot(0);
    QCOMPARE(doc.modelSpec().source, std::string("memory:step 10"));
    QVERIFY(results.wait(kTrainingWaitMs));

    const QString saved = rig.dir.filePath(QStringLiteral("step10.safetensors"));
    QCOMPARE(panel.saveModel(saved), QString());
    const TinyGpt reopened = TinyGpt::load(saved.toStdString());
    QCOMPARE(reopened.config().nEmbd, 16);
  }

  void stopEndsALongRunPromptly() {
    Rig rig(1000000);
    QVERIFY(rig.ready);
    TrainingPanel& panel = rig.panel;
    QSignalSpy& finished = rig.finished;
    QVERIFY(panel.start());
    QTRY_VERIFY_WITH_TIMEOUT(panel.lossPlot()->trainPointCount() > 0, kTrainingWaitMs);
    QElapsedTimer clock;
    clock.start();
    panel.stop();
    QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 10000);
    QVERIFY2(clock.elapsed() < 5000, qPrintable(QString::number(clock.elapsed())));
    QCOMPARE(finished.at(0).at(0).toBool(), true);
    QVERIFY(!panel.isRunning());
    QVERIFY(panel.snapshotCount() >= 1);  // the weights so far are kept
    // The plot's x-axis ends at the steps done, not at the million planned.
    QVERIFY2(panel.lossPlot()->xAxisEnd() < 50000,
             qPrintable(QString::number(panel.lossPlot()->xAxisEnd())));
    QVERIFY(panel.lossPlot()->xAxisEnd() >= panel.lossPlot()->trainPointCount());
  }

  void refusedInputIsReportedInThePanel() {
    QTemporaryDir dir;
    Document doc;
    TrainingPanel panel(&doc);
    QVERIFY(!panel.start());
    QVERIFY(panel.errorMessage().contains(QStringLiteral("corpus")));

    QVERIFY(!panel.setCorpusPath(writeFile(dir, QStringLiteral("latin1.txt"), "caf\xe9\n")));
    QVERIFY2(panel.errorMessage().contains(QStringLiteral("UTF-8")),
             qPrintable(panel.errorMessage()));

    QVERIFY(panel.setCorpusPath(writeFile(dir, QStringLiteral("corpus.txt"), corpus())));
    QVERIFY(panel.errorMessage().isEmpty());
    TrainOptions bad = tinyRun(10);
    bad.model.nHead = 3;  // does not divide 16
    panel.setOptions(bad, 1);
    QVERIFY(!panel.start());
    QVERIFY2(panel.errorMessage().contains(QStringLiteral("heads (3)")),
             qPrintable(panel.errorMessage()));

    // Too small for the block: the trainer's own message arrives from the training thread.
    QVERIFY(panel.setCorpusPath(writeFile(dir, QStringLiteral("small.txt"), "tiny text\n")));
    panel.setOptions(tinyRun(10), 1);
    QSignalSpy finished(&panel, &TrainingPanel::runFinished);
    QVERIFY(panel.start());
    QVERIFY(finished.wait(kTrainingWaitMs));
    QVERIFY2(panel.errorMessage().contains(QStringLiteral("too small")),
             qPrintable(panel.errorMessage()));
    QVERIFY(!panel.isRunning());
  }

  // The corpus path can be typed: a good path loads on Enter, a bad one is marked and reported,
  // and Start refuses a path that was typed but cannot be used.
  void corpusPathCanBeTyped() {
    QTemporaryDir dir;
    Document doc;
    TrainingPanel panel(&doc);
    panel.show();
    auto* field = panel.findChild<QLineEdit*>(QStringLiteral("corpusPath"));
    QVERIFY(field && !field->isReadOnly());
    const QString good = writeFile(dir, QStringLiteral("good.txt"), corpus());
    field->setFocus();
    QTest::keyClicks(field, good);
    QTest::keyClick(field, Qt::Key_Return);
    QVERIFY2(panel.errorMessage().isEmpty(), qPrintable(panel.errorMessage()));
    bool loaded = false;
    for (QLabel* label : panel.findChildren<QLabel*>())
      loaded =
          loaded || label->text().contains(QRegularExpression(QStringLiteral("8.?600 characters")));
    QVERIFY(loaded);
    field->clear();
    QTest::keyClicks(field, dir.filePath(QStringLiteral("missing.txt")));
    QTest::keyClick(field, Qt::Key_Return);
    QVERIFY(!panel.errorMessage().isEmpty());
    QCOMPARE(field->text(), dir.filePath(QStringLiteral("missing.txt")));
    QVERIFY(!panel.start());
    QVERIFY(!panel.isRunning());
  }

  // A message in the training panel takes the plot's room: the Start button does not move.
  void bannerMovesNoControl() {
    Document doc;
    TrainingPanel panel(&doc);
    panel.resize(420, 760);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QPushButton* start = nullptr;
    for (QPushButton* b : panel.findChildren<QPushButton*>())
      if (b->text() == QStringLiteral("Start")) start = b;
    QVERIFY(start);
    auto* field = panel.findChild<QLineEdit*>(QStringLiteral("corpusPath"));
    const QPoint before = start->mapTo(&panel, QPoint(0, 0));
    const QPoint fieldBefore = field->mapTo(&panel, QPoint(0, 0));
    QVERIFY(!panel.start());  // "Choose a corpus first"
    QVERIFY(!panel.errorMessage().isEmpty());
    QTest::qWait(20);
    QCOMPARE(start->mapTo(&panel, QPoint(0, 0)), before);
    QCOMPARE(field->mapTo(&panel, QPoint(0, 0)), fieldBefore);
  }
};

ATTNSCOPE_QTEST(TrainingPanelTest)
#include "training_panel_test.moc"
