// SPDX-License-Identifier: GPL-3.0-or-later
// Head ablation through the document and its worker, on the bundled tiny GPT: the map equals
// Model::ablateHeads called directly, progress comes in order up to L·H, cancel ends it without a
// map, a new text clears it, the toy model's refusal is shown, and in the window a click on a
// cell opens that head.
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTest>

#include <memory>
#include <vector>

#include "ablation_view.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "document.h"
#include "main_window.h"

using attnscope::gui::Document;
using attnscope::gui::MainWindow;
using attnscope::render::AblationStatus;
using attnscope::render::AblationView;
using attnscope::render::ViewKind;
using Phase = attnscope::render::AblationStatus::Phase;

namespace {

constexpr int kWaitMs = 30000;
const QString kText = QStringLiteral("To be, or not to be, that is the question");

attnscope::ModelSpec bundled() {
  attnscope::ModelSpec spec;
  spec.source = "default";
  return spec;
}

/// A document showing the result for `text` on `spec`.
void primeWith(Document& doc, const attnscope::ModelSpec& spec, const QString& text) {
  QSignalSpy results(&doc, &Document::resultChanged);
  doc.setModelSpec(spec);
  doc.setText(text);
  doc.recompute();
  QVERIFY(results.wait(kWaitMs));
}

bool finished(const Document& doc) {
  const Phase p = doc.ablation().phase;
  return p != Phase::Running && p != Phase::Idle;
}

/// What the core gives for the same request, opened and called here, off the document.
attnscope::HeadAblation direct(const QString& text, bool estimate) {
  const auto model = attnscope::openModel(bundled());
  attnscope::AblationRequest request;
  request.run.texts = {text.toStdString()};
  request.estimate = estimate;
  return model->ablateHeads(request);
}

void compareWithDirect(const Document& doc, bool estimate) {
  QCOMPARE(doc.ablation().phase, Phase::Done);
  QVERIFY(doc.ablation().ablation);
  const attnscope::HeadAblation& got = *doc.ablation().ablation;
  const attnscope::HeadAblation want = direct(kText, estimate);
  QCOMPARE(got.estimate, estimate);
  QCOMPARE(got.layers, want.layers);
  QCOMPARE(got.heads, want.heads);
  QCOMPARE(got.target.id, want.target.id);
  QCOMPARE(got.position, want.position);
  QVERIFY(got.baseline == want.baseline);
  QCOMPARE(got.probabilities.data.size(), want.probabilities.data.size());
  for (std::size_t i = 0; i < want.probabilities.data.size(); ++i) {
    // The same model, request and code path: the same numbers, not merely close ones.
    QVERIFY2(got.probabilities.data[i] == want.probabilities.data[i],
             qPrintable(QStringLiteral("head %1: %2 vs %3")
                            .arg(i)
                            .arg(got.probabilities.data[i], 0, 'g', 9)
                            .arg(want.probabilities.data[i], 0, 'g', 9)));
    QVERIFY(got.logProbChange.data[i] == want.logProbChange.data[i]);
  }
}

}  // namespace

class DocumentAblationTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { qRegisterMetaType<AblationStatus>(); }

  void exactAblationMatchesTheModelAndReportsProgressInOrder() {
    Document doc;
    primeWith(doc, bundled(), kText);
    QCOMPARE(doc.ablation().phase, Phase::Idle);
    const int heads = doc.result()->group().layers() * doc.result()->group().heads();
    QVERIFY(heads > 1);
    QSignalSpy progress(&doc, &Document::ablationProgress);
    doc.runAblation(false);
    QCOMPARE(doc.ablation().phase, Phase::Running);
    QCOMPARE(doc.ablation().total, heads);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    QVERIFY2(doc.ablation().phase == Phase::Done, qPrintable(doc.ablation().message));
    QCOMPARE(progress.count(), heads);
    for (int i = 0; i < progress.count(); ++i) {
      QCOMPARE(progress.at(i).at(0).toInt(), i + 1);
      QCOMPARE(progress.at(i).at(1).toInt(), heads);
    }
    QCOMPARE(doc.ablation().done, heads);
    compareWithDirect(doc, false);
  }

  void estimateMatchesTheModel() {
    Document doc;
    primeWith(doc, bundled(), kText);
    doc.runAblation(true);
    QVERIFY(doc.ablation().estimate);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    compareWithDirect(doc, true);
  }

  void cancelEndsWithoutAMap() {
    Document doc;
    primeWith(doc, bundled(), kText);
    QSignalSpy changes(&doc, &Document::ablationChanged);
    doc.runAblation(false);
    doc.cancelAblation();  // before the worker gets to it: the core stops at its first layer
    QVERIFY(doc.ablation().cancelling);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    QCOMPARE(doc.ablation().phase, Phase::Cancelled);
    QVERIFY(!doc.ablation().ablation);
    QVERIFY(doc.ablation().done < doc.ablation().total);
    AblationView view;
    view.setResult(doc.result());
    view.setAblation(changes.last().at(0).value<AblationStatus>());
    QVERIFY2(view.message().contains(QStringLiteral("cancelled")), qPrintable(view.message()));
    // It can run again afterwards.
    doc.runAblation(true);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    QCOMPARE(doc.ablation().phase, Phase::Done);
  }

  void aNewTextClearsTheAblation() {
    Document doc;
    primeWith(doc, bundled(), kText);
    doc.runAblation(true);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    QCOMPARE(doc.ablation().phase, Phase::Done);
    // The same text computed again (another layer opened, say) keeps the map.
    doc.recompute();
    QCOMPARE(doc.ablation().phase, Phase::Done);
    doc.setText(kText + QStringLiteral(" now"));
    doc.recompute();
    QCOMPARE(doc.ablation().phase, Phase::Idle);
    QVERIFY(!doc.ablation().ablation);

    // A running one is cancelled, and what it still sends back is dropped.
    QSignalSpy results(&doc, &Document::resultChanged);
    QVERIFY(results.wait(kWaitMs));
    doc.runAblation(false);
    QCOMPARE(doc.ablation().phase, Phase::Running);
    doc.setText(kText);
    doc.recompute();
    QCOMPARE(doc.ablation().phase, Phase::Idle);
    QVERIFY(results.wait(kWaitMs));
    QTest::qWait(200);
    QCOMPARE(doc.ablation().phase, Phase::Idle);
  }

  void aRefusalIsShown() {
    Document doc;
    attnscope::ModelSpec toy;
    toy.source = "toy";
    primeWith(doc, toy, QStringLiteral("abc"));
    doc.runAblation(false);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    QCOMPARE(doc.ablation().phase, Phase::Failed);
    QVERIFY2(doc.ablation().message.contains(QStringLiteral("predicts no token")),
             qPrintable(doc.ablation().message));
    AblationView view;
    view.setAblation(doc.ablation());
    QVERIFY2(view.message().contains(doc.ablation().message), qPrintable(view.message()));
  }

  void theWindowRunsItAndAClickOpensTheHead() {
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), kText, QStringLiteral("default"), std::nullopt});
    window.resize(1400, 900);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1, kWaitMs);
    auto* tabs = window.findChild<QTabWidget*>();
    auto* view = qobject_cast<AblationView*>(window.view(ViewKind::Ablation));
    QVERIFY(view);
    tabs->setCurrentWidget(view);
    QVERIFY(doc.currentView() == ViewKind::Ablation);
    auto* exact = view->findChild<QPushButton*>(QStringLiteral("ablateExact"));
    auto* cancel = view->findChild<QPushButton*>(QStringLiteral("ablationCancel"));
    QVERIFY(exact && cancel);
    QVERIFY(exact->isEnabled());
    QVERIFY(!cancel->isEnabled());
    QTest::mouseClick(exact, Qt::LeftButton);
    QCOMPARE(doc.ablation().phase, Phase::Running);
    QTRY_VERIFY_WITH_TIMEOUT(finished(doc), kWaitMs);
    QCOMPARE(doc.ablation().phase, Phase::Done);
    QVERIFY(view->ablation().ablation);
    view->repaint();
    // For the README: run under xvfb-run with QT_QPA_PLATFORM=xcb to see the real window.
    if (const QByteArray shot = qgetenv("ATTNSCOPE_ABLATION_SCREENSHOT"); !shot.isEmpty())
      QVERIFY(window.grab().save(QString::fromLocal8Bit(shot)));
    const QRectF cell = view->cellRect(1, 2);
    QVERIFY(!cell.isEmpty());
    QTest::mouseClick(view, Qt::LeftButton, {}, cell.center().toPoint());
    QCOMPARE(doc.viewState().layer, 1);
    QCOMPARE(doc.viewState().head, 2);
    QVERIFY(doc.currentView() == ViewKind::Heatmap);
  }
};

QTEST_MAIN(DocumentAblationTest)
#include "document_ablation_test.moc"
