// SPDX-License-Identifier: GPL-3.0-or-later
// A seeded random session against the real window for a bounded time: typing, configuration and
// model changes (toy and a tiny checkpoint), view switches, head/layer stepping and exports. Then:
// the worker settles on the last edit, and once the window is gone no thread of ours is left.
#include <QDir>
#include <QElapsedTimer>
#include <QPlainTextEdit>
#include <QRandomGenerator>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QThreadPool>

#include <atomic>
#include <fstream>

#include "attention_view.h"
#include "attnscope/tiny_gpt.h"
#include "document.h"
#include "exporter.h"
#include "main_window.h"

using attnscope::ModelSpec;
using attnscope::TinyGpt;
using attnscope::gui::Document;
using attnscope::gui::MainWindow;

namespace {

/// The names of this process's threads (Linux: /proc/self/task/*/comm).
QStringList threadNames() {
  QStringList names;
  const QDir tasks(QStringLiteral("/proc/self/task"));
  for (const QString& tid : tasks.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    std::ifstream comm((tasks.filePath(tid) + QStringLiteral("/comm")).toStdString());
    std::string name;
    std::getline(comm, name);
    names << QString::fromStdString(name);
  }
  return names;
}

int seconds() {
  const int fromEnv = qEnvironmentVariableIntValue("ATTNSCOPE_STRESS_SECONDS");
  return fromEnv > 0 ? fromEnv : 12;
}

}  // namespace

class GuiStressTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void randomSessionLeavesNothingBehind() {
    if (!QDir(QStringLiteral("/proc/self/task")).exists()) QSKIP("needs /proc/self/task");
    QTemporaryDir dir;
    attnscope::TinyGptConfig c;
    c.nLayer = 2;
    c.nHead = 4;
    c.nEmbd = 16;
    c.blockSize = 32;
    const QString checkpoint = dir.filePath(QStringLiteral("tiny.safetensors"));
    TinyGpt::create(c, TinyGpt::vocabularyOf("abcdefghijklmnopqrstuvwxyz ,.\n"), 5)
        .save(checkpoint.toStdString());

    // Warm-up: LibTorch's and Qt's own pools start on first use and stay; count after them.
    {
      Document doc;
      MainWindow window(&doc, nullptr);
      window.start({QString(), QStringLiteral("warm up"), QStringLiteral("toy"), std::nullopt});
      QTRY_VERIFY_WITH_TIMEOUT(doc.result() && !doc.isBusy(), 30000);
    }
    // Threads LibTorch's OpenMP and BLAS start stay for the life of the process (they carry the
    // name of the thread that first used them, "attnscope-compu"), so the count is taken now.
    QVERIFY(QThreadPool::globalInstance()->waitForDone(5000));
    const QStringList before = threadNames();

    QRandomGenerator rng(20240611);
    int iterations = 0, exports = 0;
    std::atomic<int> finishedThreads{0};
    {
      Document doc;
      MainWindow window(&doc, nullptr);
      window.start({QString(), QStringLiteral("the cat sat"), QStringLiteral("toy"), std::nullopt});
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      // The window's own threads: the document's compute thread and the training panel's.
      QList<QThread*> ours = window.findChildren<QThread*>() + doc.findChildren<QThread*>();
      QCOMPARE(ours.size(), 2);
      for (QThread* t : ours) {
        QVERIFY(t->isRunning());
        connect(
            t, &QThread::finished, this, [&finishedThreads] { ++finishedThreads; },
            Qt::DirectConnection);
      }
      auto* edit = window.findChild<QPlainTextEdit*>();
      QTabWidget* tabs = nullptr;  // the views' tabs, not the Model/Train ones
      for (QTabWidget* t : window.findChildren<QTabWidget*>()) {
        if (t->indexOf(window.view(attnscope::render::ViewKind::Grid)) >= 0) tabs = t;
      }
      QVERIFY(edit && tabs);

      QElapsedTimer clock;
      clock.start();
      const qint64 budgetMs = seconds() * 1000;
      while (clock.elapsed() < budgetMs && iterations < 2000) {
        ++iterations;
        switch (rng.bounded(9)) {
          case 0:
          case 1: {  // typing at the end, sometimes a new line (a new batch item)
            edit->setFocus();
            edit->moveCursor(QTextCursor::End);
            const char* pieces[] = {"a", " the", "x", ".", "new line", "zz", " "};
            const int piece = int(rng.bounded(7));
            if (piece == 4) QTest::keyClick(edit, Qt::Key_Return);
            QTest::keyClicks(edit, QString::fromLatin1(pieces[piece]));
            break;
          }
          case 2: {  // deleting, down to an empty text (an error the window must survive)
            edit->moveCursor(QTextCursor::End);
            const int n = int(rng.bounded(6));
            for (int i = 0; i < n; ++i) QTest::keyClick(edit, Qt::Key_Backspace);
            break;
          }
          case 3: {  // the toy's configuration
            ModelSpec spec;
            spec.source = "toy";
            spec.toy.variant =
                rng.bounded(2) ? attnscope::Variant::Fused : attnscope::Variant::PerHead;
            const int heads[] = {1, 2, 4, 8, 16};
            spec.toy.dModel = 16;
            spec.toy.inputDim = 8 + int(rng.bounded(3)) * 8;
            spec.toy.heads = heads[rng.bounded(5)];
            spec.toy.mask =
                rng.bounded(2) ? attnscope::MaskKind::Causal : attnscope::MaskKind::None;
            doc.setModelSpec(spec);
            break;
          }
          case 4: {  // model switches
            ModelSpec spec = doc.modelSpec();
            spec.source = rng.bounded(2) ? checkpoint.toStdString() : std::string("toy");
            doc.setModelSpec(spec);
            break;
          }
          case 5:
            tabs->setCurrentIndex(int(rng.bounded(tabs->count())));
            break;
          case 6:
            switch (rng.bounded(3)) {
              case 0:
                doc.stepHead(rng.bounded(2) ? 1 : -1);
                break;
              case 1:
                doc.stepLayer(rng.bounded(2) ? 1 : -1);
                break;
              default:
                doc.selectItem(int(rng.bounded(3)));
                break;
            }
            break;
          case 7:
            if (doc.result() && window.currentView() && rng.bounded(3) == 0) {
              attnscope::render::ExportOptions o;
              o.width = 400;
              o.height = 300;
              const QString path = dir.filePath(QStringLiteral("export-%1.png").arg(iterations));
              const QString error =
                  attnscope::render::Exporter::exportView(*window.currentView(), path, o);
              QVERIFY2(error.isEmpty(), qPrintable(error));
              ++exports;
            }
            break;
          default:
            doc.recompute();
            break;
        }
        QTest::qWait(int(rng.bounded(25)));
      }

      // The last edit: a valid text on the checkpoint. The worker must settle on exactly it.
      ModelSpec last;
      last.source = checkpoint.toStdString();
      doc.setModelSpec(last);
      doc.setText(QStringLiteral("final words"));
      const quint64 generation = doc.generation();
      QTRY_VERIFY_WITH_TIMEOUT(!doc.isBusy() && doc.generation() > generation, 30000);
      QTRY_VERIFY_WITH_TIMEOUT(!doc.isBusy(), 30000);
      QVERIFY2(doc.error().isEmpty(), qPrintable(doc.error()));
      QCOMPARE(doc.resultTexts(), QStringList{QStringLiteral("final words")});
      QCOMPARE(doc.result()->group().layers(), 2);
    }
    qInfo("%d iterations, %d exports", iterations, exports);
    QVERIFY(iterations > 20);

    // Both threads ran to their end before the window was gone, and the process has no more
    // threads than after the warm-up.
    QCOMPARE(finishedThreads.load(), 2);
    // Qt's pool (image scaling in the exports) keeps idle threads for 30 s; waitForDone ends them
    // and fails if a task still runs.
    QVERIFY(QThreadPool::globalInstance()->waitForDone(5000));
    QTRY_VERIFY2_WITH_TIMEOUT(
        threadNames().size() <= before.size(),
        qPrintable(QStringLiteral("before: %1\nafter: %2")
                       .arg(before.join(QLatin1Char(',')), threadNames().join(QLatin1Char(',')))),
        5000);
  }
};

QTEST_MAIN(GuiStressTest)
#include "gui_stress_test.moc"
