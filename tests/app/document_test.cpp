// SPDX-License-Identifier: GPL-3.0-or-later
// The document: debounced recomputation, stale results dropped, errors keep the last result.
#include <QPointer>
#include <QSignalSpy>
#include <QTest>
#include <QThread>

#include <atomic>

#include "attnscope/head_statistics.h"
#include "document.h"
#include "qtest_main.h"

using attnscope::gui::Document;
using attnscope::render::ResultPtr;

namespace {

constexpr int kWaitMs = 20000;

ResultPtr resultAt(const QSignalSpy& spy, int i) { return spy.at(i).at(0).value<ResultPtr>(); }

/// A document with a result for `text` already in place.
void primeWith(Document& doc, const QString& text) {
  QSignalSpy results(&doc, &Document::resultChanged);
  doc.setText(text);
  doc.recompute();
  QVERIFY(results.wait(kWaitMs));
}

}  // namespace

class DocumentTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void batchTextsSkipsBlankLines() {
    QCOMPARE(Document::batchTexts(QStringLiteral("a b\n\n   \nc\r\n")), QStringList({"a b", "c"}));
    QVERIFY(Document::batchTexts(QStringLiteral(" \n\t")).isEmpty());
  }

  void typingGivesOneRecomputeAfterTheDebounce() {
    Document doc;
    doc.setDebounceInterval(150);
    QSignalSpy started(&doc, &Document::computeStarted);
    QSignalSpy results(&doc, &Document::resultChanged);
    // Keystrokes 20 ms apart, closer than the debounce: none of them may start a computation.
    for (const char* text : {"T", "Th", "The", "The c", "The cat"}) {
      doc.setText(QString::fromLatin1(text));
      QTest::qWait(20);
    }
    QCOMPARE(started.count(), 0);
    QVERIFY(results.wait(kWaitMs));
    QTest::qWait(400);  // nothing more may arrive
    QCOMPARE(started.count(), 1);
    QCOMPARE(results.count(), 1);
    const ResultPtr r = resultAt(results, 0);
    QVERIFY(r);
    QCOMPARE(r, doc.result());
    // The char tokenizer gives one token per character: computed from the last text only.
    QCOMPARE(r->group().batch(), 1);
    QCOMPARE(r->group().queryLengths.at(0), 7);
    QCOMPARE(r->group().heads(), 4);
    QVERIFY(!doc.isBusy());
    QVERIFY(doc.error().isEmpty());
  }

  void eachNonEmptyLineIsABatchItem() {
    Document doc;
    QSignalSpy results(&doc, &Document::resultChanged);
    doc.setText(QStringLiteral("ab\n\nabcd\n"));
    QVERIFY(results.wait(kWaitMs));
    const ResultPtr r = doc.result();
    QCOMPARE(r->group().batch(), 2);
    QCOMPARE(r->group().queryLengths, std::vector<int>({2, 4}));
    QCOMPARE(doc.resultTexts(), QStringList({"ab", "abcd"}));
  }

  // Issue 29: head B from a second model runs on the same text while Compare is shown; the same
  // model again differs in no head; a model that cannot open says so in the banner and keeps A.
  void compareRunsASecondModelOnTheSameText() {
    Document doc;
    doc.setCurrentView(attnscope::render::ViewKind::Compare);
    QSignalSpy results(&doc, &Document::resultChanged);
    QSignalSpy others(&doc, &Document::compareResultChanged);
    doc.setText(QStringLiteral("to be or not"));
    QVERIFY(results.wait(kWaitMs));
    QCOMPARE(others.count(), 0);  // no second model chosen
    doc.setCompareModel(doc.modelSpec());
    QTRY_VERIFY_WITH_TIMEOUT(doc.compareResult() != nullptr, kWaitMs);
    const std::vector<double> d =
        attnscope::headDistancesBetween(doc.result()->group(), doc.compareResult()->group(), 0);
    QCOMPARE(static_cast<int>(d.size()),
             doc.result()->group().layers() * doc.result()->group().heads());
    for (double v : d) QCOMPARE(v, 0.0);
    // A new text runs both again.
    const int before = others.count();
    doc.setText(QStringLiteral("to be or not to be"));
    QTRY_VERIFY_WITH_TIMEOUT(others.count() > before && doc.compareResult() &&
                                 doc.compareResult()->group().queryLengths[0] == 18,
                             kWaitMs);
    attnscope::ModelSpec missing;
    missing.source = "/nonexistent/model-for-b";
    doc.setCompareModel(missing);
    QTRY_VERIFY_WITH_TIMEOUT(doc.error().contains(QStringLiteral("Compare, B's model")), kWaitMs);
    QVERIFY(!doc.compareResult());
    QVERIFY(doc.result());  // A's result stays
    doc.setCompareModel(std::nullopt);
    QVERIFY(doc.error().isEmpty());
  }

  void staleResultsAreDiscarded() {
    Document doc;
    QSignalSpy started(&doc, &Document::computeStarted);
    QSignalSpy results(&doc, &Document::resultChanged);
    // Two computations started back to back: the first is superseded before it can return.
    doc.setText(QStringLiteral("first"));
    doc.recompute();
    doc.setText(QStringLiteral("the second one"));
    doc.recompute();
    QCOMPARE(started.count(), 2);
    QVERIFY(results.wait(kWaitMs));
    QTest::qWait(400);
    QCOMPARE(results.count(), 1);
    QCOMPARE(resultAt(results, 0)->group().queryLengths.at(0), 14);
    QCOMPARE(doc.generation(), quint64(2));
  }

  void aSlowOldRunNeverOverwritesANewerResult() {
    Document doc;
    attnscope::ModelSpec big = doc.modelSpec();
    big.toy.inputDim = 2048;
    big.toy.dModel = 2048;
    big.toy.heads = 16;
    doc.setModelSpec(big);
    doc.setText(QString(600, QLatin1Char('x')));
    QSignalSpy results(&doc, &Document::resultChanged);
    doc.recompute();  // slow: big model, long text
    QTest::qWait(5);  // let the worker start on it
    attnscope::ModelSpec small = big;
    small.toy.inputDim = small.toy.dModel = 32;
    small.toy.heads = 2;
    doc.setModelSpec(small);
    doc.setText(QStringLiteral("short"));
    doc.recompute();
    QVERIFY(results.wait(kWaitMs));
    QTest::qWait(300);
    QCOMPARE(results.count(), 1);
    QCOMPARE(doc.result()->group().heads(), 2);
    QCOMPARE(doc.result()->group().queryLengths.at(0), 5);
  }

  void invalidConfigurationIsReportedAndKeepsTheResult() {
    Document doc;
    primeWith(doc, QStringLiteral("keep me"));
    const ResultPtr good = doc.result();
    QVERIFY(good);

    QSignalSpy errors(&doc, &Document::errorChanged);
    QSignalSpy results(&doc, &Document::resultChanged);
    attnscope::ModelSpec spec = doc.modelSpec();
    spec.toy.dModel = 64;
    spec.toy.heads = 3;
    doc.setModelSpec(spec);
    doc.recompute();
    QCOMPARE(errors.count(), 1);
    QVERIFY2(doc.error().contains(QStringLiteral("heads (3) must divide d_model (64)")),
             qPrintable(doc.error()));
    QCOMPARE(doc.result(), good);
    QVERIFY(!doc.isBusy());

    spec.toy.heads = 4;
    doc.setModelSpec(spec);
    doc.setText(QStringLiteral("  \n  "));
    doc.recompute();
    QVERIFY2(doc.error().contains(QStringLiteral("Type a sentence")), qPrintable(doc.error()));
    QCOMPARE(doc.result(), good);
    QTest::qWait(300);
    QCOMPARE(results.count(), 0);
  }

  void coreErrorsFromTheWorkerKeepTheResult() {
    Document doc;
    primeWith(doc, QStringLiteral("keep me"));
    const ResultPtr good = doc.result();
    QSignalSpy errors(&doc, &Document::errorChanged);

    // Longer than the default limit of 4096 tokens: the core refuses it.
    doc.setText(QString(5000, QLatin1Char('a')));
    doc.recompute();
    QVERIFY(errors.wait(kWaitMs));
    QVERIFY2(!doc.error().isEmpty(), "expected a limit error");
    QCOMPARE(doc.result(), good);

    // A model that cannot be opened names itself in the error.
    attnscope::ModelSpec spec = doc.modelSpec();
    spec.source = "/nonexistent/model.safetensors";
    doc.setModelSpec(spec);
    doc.setText(QStringLiteral("fine"));
    doc.recompute();
    QVERIFY(errors.wait(kWaitMs));
    QVERIFY2(doc.error().contains(QStringLiteral("/nonexistent/model.safetensors")),
             qPrintable(doc.error()));
    QCOMPARE(doc.result(), good);

    // Fixing it clears the error and brings a new result.
    QSignalSpy results(&doc, &Document::resultChanged);
    spec.source = "toy";
    doc.setModelSpec(spec);
    doc.recompute();
    QVERIFY(results.wait(kWaitMs));
    QVERIFY(doc.error().isEmpty());
    QVERIFY(doc.result() != good);
  }

  // Over the memory limit, the window keeps the attention of the layer on screen and its
  // neighbours (all layers are still computed), says so, and computes another layer when the
  // user opens it. The limit is set from the run's own estimate: fixed part + 2.5 layers.
  void layersBeyondTheMemoryLimitAreKeptAroundTheOneOnScreen() {
    Document doc;
    attnscope::ModelSpec spec;
    spec.source = "default";  // the bundled tiny GPT: several layers
    doc.setModelSpec(spec);
    primeWith(doc, QStringLiteral("To be, or not to be"));
    const attnscope::MemoryEstimate full = doc.memoryEstimate();
    QVERIFY(full.total > 0);
    QVERIFY(full.layers >= 3);
    QCOMPARE(full.layersKept, full.layers);
    QVERIFY(doc.result()->group().keptLayers.empty());
    // Every layer kept, and room for it: the value-weighted norms come as a group of their own.
    const attnscope::AttentionGroup* norms = doc.result()->findGroup("value_norm");
    QVERIFY(norms);
    QVERIFY(!norms->distribution);
    QCOMPARE(norms->attention.shape, doc.result()->group().attention.shape);
    const int last = full.layers - 1;
    doc.selectHead(last, 0);

    QSignalSpy results(&doc, &Document::resultChanged);
    const uint64_t fixed = full.total - full.attention - full.scores;
    doc.setMemoryLimitBytes(fixed + 2 * full.perLayer + full.perLayer / 2);
    QVERIFY(results.wait(kWaitMs));
    const attnscope::AttentionGroup& g = doc.result()->group();
    QCOMPARE(g.keptLayers, std::vector<int>({last - 1, last}));
    QVERIFY(!doc.result()->findGroup("value_norm"));  // they need every layer
    QCOMPARE(g.layers(), full.layers);
    QCOMPARE(doc.memoryEstimate().layersKept, 2);
    QVERIFY(doc.memoryEstimate().total <= doc.memoryLimitBytes());
    QVERIFY2(doc.workerNotices().join(' ').contains(
                 QStringLiteral("Attention kept for layers %1–%2 of %3")
                     .arg(last - 1)
                     .arg(last)
                     .arg(full.layers)),
             qPrintable(doc.workerNotices().join(' ')));

    // Opening a layer that was not kept runs again around it.
    doc.selectHead(0, 0);
    QVERIFY(results.wait(kWaitMs));
    QCOMPARE(doc.result()->group().keptLayers, std::vector<int>({0, 1}));
    QVERIFY(doc.result()->group().hasLayer(0));
  }

  void selectionStaysInsideTheResult() {
    Document doc;
    primeWith(doc, QStringLiteral("abc"));
    doc.selectHead(5, 10);
    QCOMPARE(doc.viewState().layer, 0);
    QCOMPARE(doc.viewState().head, 3);
    doc.stepHead(1);
    QCOMPARE(doc.viewState().head, 0);  // wraps
    doc.stepHead(-1);
    QCOMPARE(doc.viewState().head, 3);
    doc.selectItem(7);
    QCOMPARE(doc.viewState().item, 0);

    // A smaller model shrinks the selection with the result.
    QSignalSpy states(&doc, &Document::viewStateChanged);
    QSignalSpy results(&doc, &Document::resultChanged);
    attnscope::ModelSpec spec = doc.modelSpec();
    spec.toy.heads = 2;
    doc.setModelSpec(spec);
    doc.recompute();
    QVERIFY(results.wait(kWaitMs));
    QCOMPARE(doc.viewState().head, 1);
    QVERIFY(states.count() >= 1);
  }

  void sessionLoadReplacesEverythingAndRecomputes() {
    Document doc;
    attnscope::gui::Session s;
    s.text = QStringLiteral("one\ntwo words");
    s.model.toy.heads = 8;
    s.model.toy.tokenizer = attnscope::TokenizerKind::Word;
    s.view.head = 6;
    s.view.palette = QStringLiteral("magma");
    s.currentView = attnscope::render::ViewKind::Grid;
    QSignalSpy results(&doc, &Document::resultChanged);
    doc.loadSession(s);
    QVERIFY(results.wait(kWaitMs));
    QCOMPARE(doc.text(), s.text);
    QCOMPARE(doc.result()->group().heads(), 8);
    QCOMPARE(doc.result()->group().queryLengths, std::vector<int>({1, 2}));
    QCOMPARE(doc.viewState().head, 6);
    QCOMPARE(doc.viewState().palette, QStringLiteral("magma"));
    QVERIFY(doc.currentView() == attnscope::render::ViewKind::Grid);
  }

  void destroyingWhileComputingIsClean() {
    auto doc = std::make_unique<Document>();
    attnscope::ModelSpec big = doc->modelSpec();
    big.toy.inputDim = big.toy.dModel = 1024;
    doc->setModelSpec(big);
    doc->setText(QString(2000, QLatin1Char('y')));
    doc->recompute();
    QTest::qWait(10);
    auto* thread = doc->findChild<QThread*>(QStringLiteral("attnscope-compute"));
    QVERIFY(thread != nullptr);
    QVERIFY(thread->isRunning());
    const QPointer<QThread> alive(thread);
    std::atomic<bool> finished{false};
    // Direct: QThread::finished is emitted from the compute thread as it ends.
    QObject::connect(
        thread, &QThread::finished, thread, [&finished] { finished = true; }, Qt::DirectConnection);
    doc.reset();  // must cancel, join the thread and not crash
    QVERIFY2(finished, "the compute thread was not joined before the document went away");
    QVERIFY(alive.isNull());
  }
};

ATTNSCOPE_QTEST(DocumentTest)
#include "document_test.moc"
